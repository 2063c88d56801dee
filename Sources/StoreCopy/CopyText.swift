import Foundation
import JSON

/// PostgreSQL's COPY text format (one row per line, fields separated by tabs, `\N` for NULL, backslash escapes),
/// as the store move writes and reads it. Pure, so it is tested without a server.
package enum CopyText {
    /// Appends one row to `output`: each value in the form COPY reads for `type` (booleans `t`/`f`, bytes as a
    /// `bytea` hex literal, lists as a `text[]` literal), escaped, then the line's end.
    package static func appendRow(_ row: [PortableValue], to output: inout [UInt8]) {
        for (index, value) in row.enumerated() {
            if index > 0 { output.append(0x09) }
            switch value {
            case .null:
                output.append(contentsOf: [0x5C, 0x4E])
            case .integer(let number):
                output.append(contentsOf: String(number).utf8)
            case .text(let text):
                appendEscaped(text.utf8, to: &output)
            case .boolean(let flag):
                output.append(flag ? 0x74 : 0x66)
            case .bytes(let data):
                // `\x…` is the bytea input; its backslash is escaped for COPY.
                output.append(contentsOf: [0x5C, 0x5C, 0x78])
                for byte in data {
                    output.append(hexDigits[Int(byte >> 4)])
                    output.append(hexDigits[Int(byte & 15)])
                }
            case .textList(let items):
                appendEscaped(arrayLiteral(items).utf8, to: &output)
            }
        }
        output.append(0x0A)
    }

    /// A `text[]` literal: every element double-quoted, `"` and `\` backslash-escaped.
    static func arrayLiteral(_ items: [String]) -> String {
        var literal = "{"
        for (index, item) in items.enumerated() {
            if index > 0 { literal += "," }
            literal += "\""
            for scalar in item.unicodeScalars {
                if scalar == "\\" || scalar == "\"" { literal.unicodeScalars.append("\\") }
                literal.unicodeScalars.append(scalar)
            }
            literal += "\""
        }
        return literal + "}"
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendEscaped<S: Sequence>(_ bytes: S, to output: inout [UInt8]) where S.Element == UInt8 {
        for byte in bytes {
            switch byte {
            case 0x5C: output.append(contentsOf: [0x5C, 0x5C])
            case 0x09: output.append(contentsOf: [0x5C, 0x74])
            case 0x0A: output.append(contentsOf: [0x5C, 0x6E])
            case 0x0D: output.append(contentsOf: [0x5C, 0x72])
            default: output.append(byte)
            }
        }
    }

    /// Splits one line (without its `\n`) into fields, unescaped; nil is `\N`.
    package static func fields(_ line: UnsafeRawBufferPointer) -> [[UInt8]?] {
        var fields: [[UInt8]?] = []
        var current: [UInt8] = []
        var isNull = false
        var index = 0
        let count = line.count
        while index < count {
            let byte = line[index]
            if byte == 0x09 {
                fields.append(isNull ? nil : current)
                current.removeAll(keepingCapacity: true)
                isNull = false
                index += 1
                continue
            }
            guard byte == 0x5C, index + 1 < count else {
                current.append(byte)
                index += 1
                continue
            }
            let next = line[index + 1]
            index += 2
            switch next {
            case 0x4E: isNull = true
            case 0x62: current.append(0x08)
            case 0x66: current.append(0x0C)
            case 0x6E: current.append(0x0A)
            case 0x72: current.append(0x0D)
            case 0x74: current.append(0x09)
            case 0x76: current.append(0x0B)
            case 0x78:
                // \xHH: one or two hex digits.
                var value: UInt8 = 0
                var digits = 0
                while digits < 2, index < count, let digit = hexValue(line[index]) {
                    value = value << 4 | digit
                    index += 1
                    digits += 1
                }
                current.append(digits == 0 ? 0x78 : value)
            case 0x30...0x37:
                // \NNN: one to three octal digits.
                var value = next - 0x30
                var digits = 1
                while digits < 3, index < count, (0x30...0x37).contains(line[index]) {
                    value = value &<< 3 | (line[index] - 0x30)
                    index += 1
                    digits += 1
                }
                current.append(value)
            default:
                current.append(next)
            }
        }
        fields.append(isNull ? nil : current)
        return fields
    }

    /// One field read as `type` (what `CopyTable.postgresqlCopyOut` selects: bytes as hex, lists as JSON).
    /// - Throws: `StoreCopyError.unreadableValue` for a field that is not of the type.
    package static func value(_ field: [UInt8]?, as type: PortableType, table: String, column: String) throws
        -> PortableValue
    {
        guard let field else { return .null }
        let bad = { StoreCopyError.unreadableValue(table: table, column: column, backend: .postgresql) }
        switch type {
        case .text:
            return .text(String(decoding: field, as: UTF8.self))
        case .integer:
            guard let number = Int64(String(decoding: field, as: UTF8.self)) else { throw bad() }
            return .integer(number)
        case .boolean:
            guard field.count == 1, field[0] == 0x74 || field[0] == 0x66 else { throw bad() }
            return .boolean(field[0] == 0x74)
        case .bytes:
            guard field.count % 2 == 0 else { throw bad() }
            var data = Data(capacity: field.count / 2)
            var index = 0
            while index < field.count {
                guard let high = hexValue(field[index]), let low = hexValue(field[index + 1]) else { throw bad() }
                data.append(high << 4 | low)
                index += 2
            }
            return .bytes(data)
        case .textList:
            guard let items = jsonStrings(field) else { throw bad() }
            return .textList(items)
        }
    }

    /// A JSON array of strings, or nil.
    static func jsonStrings<C: Collection>(_ bytes: C) -> [String]? where C.Element == UInt8 {
        guard let array = JSONValue.parse(Data(bytes))?.arrayValue else { return nil }
        var items: [String] = []
        for item in array {
            guard let text = item.stringValue else { return nil }
            items.append(text)
        }
        return items
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x61...0x66: return byte - 0x61 + 10
        case 0x41...0x46: return byte - 0x41 + 10
        default: return nil
        }
    }
}
