import Foundation

/// One column value as the store move carries it between backends: the meaning, not either backend's storage
/// (SQLite keeps booleans as 0/1 and a publish's targets as JSON text; PostgreSQL as `boolean` and `text[]`).
package enum PortableValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)
    case bytes(Data)
    case boolean(Bool)
    /// A list of strings (a publish's interests or users).
    case textList([String])

    /// The value's canonical bytes, appended to `output`: a type tag, then the payload in a fixed layout (integers
    /// as 8 bytes big-endian, lengths as 4 bytes big-endian before UTF-8 text or raw bytes). Two rows encode to the
    /// same bytes exactly when they hold the same values, whichever backend they were read from, so a checksum over
    /// these bytes compares a table across backends. The layout is part of `TableChecksum`'s meaning: change it
    /// only with a new tag.
    package func encode(into output: inout [UInt8]) {
        switch self {
        case .null:
            output.append(0)
        case .integer(let value):
            output.append(1)
            Self.append(UInt64(bitPattern: value), into: &output)
        case .text(let text):
            output.append(2)
            Self.appendCounted(Array(text.utf8), into: &output)
        case .bytes(let data):
            output.append(3)
            Self.appendCounted(Array(data), into: &output)
        case .boolean(let value):
            output.append(4)
            output.append(value ? 1 : 0)
        case .textList(let items):
            output.append(5)
            Self.appendLength(items.count, into: &output)
            for item in items { Self.appendCounted(Array(item.utf8), into: &output) }
        }
    }

    private static func append(_ value: UInt64, into output: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) {
            output.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    private static func appendLength(_ count: Int, into output: inout [UInt8]) {
        let value = UInt32(truncatingIfNeeded: count)
        for shift in stride(from: 24, through: 0, by: -8) {
            output.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
        }
    }

    private static func appendCounted(_ bytes: [UInt8], into output: inout [UInt8]) {
        appendLength(bytes.count, into: &output)
        output.append(contentsOf: bytes)
    }
}

extension PortableValue: CustomStringConvertible {
    /// A short human form for error messages (texts cut at 40 characters; never printed for tokens by the tool).
    package var description: String {
        switch self {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .text(let text): return text.count > 40 ? "\"\(text.prefix(40))…\"" : "\"\(text)\""
        case .bytes(let data): return "\(data.count) bytes"
        case .boolean(let value): return value ? "true" : "false"
        case .textList(let items): return "[\(items.count) items]"
        }
    }
}
