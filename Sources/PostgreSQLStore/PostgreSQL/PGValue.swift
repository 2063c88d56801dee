import Foundation
import PushStore

/// A statement parameter, sent in libpq's text format (SQL casts in the statement give it its type).
package enum PGValue: Sendable, Equatable {
    case null
    case text(String)
    case integer(Int64)
    case bytes(Data)
    /// A `text[]` literal; nil elements are SQL NULLs.
    case textArray([String?])
    /// A `bigint[]` literal; nil elements are SQL NULLs.
    case integerArray([Int64?])

    /// `.text`, or `.null` for `nil`.
    static func text(_ value: String?) -> PGValue { value.map { .text($0) } ?? .null }
    /// `.integer`, or `.null` for `nil`.
    static func integer(_ value: Int64?) -> PGValue { value.map { .integer($0) } ?? .null }
    /// A `Date` as integer milliseconds since 1970 (the store's time unit, as on SQLite), or `.null`.
    static func millis(_ date: Date?) -> PGValue { date.map { .integer($0.millisecondsSince1970) } ?? .null }
    /// A boolean as PostgreSQL's text form.
    static func bool(_ value: Bool) -> PGValue { .text(value ? "t" : "f") }

    /// The text form libpq sends, or nil for SQL NULL.
    ///
    /// PostgreSQL's text cannot hold U+0000, and libpq takes C strings, which would silently end at it; such
    /// characters (which only hostile input carries: a JSON string `"\u0000"` in a reporting event's `deviceId` or a
    /// registration's `bundleIdentifier`) are sent as U+FFFD instead, so a lookup simply finds nothing and a stored
    /// value keeps its length, rather than the request failing.
    func encoded() -> String? {
        switch self {
        case .null: return nil
        case .text(let text): return Self.checked(text)
        case .integer(let value): return String(value)
        case .bytes(let data): return "\\x" + data.map { Self.hexDigits[Int($0)] }.joined()
        case .integerArray(let values):
            return "{" + values.map { $0.map { String($0) } ?? "NULL" }.joined(separator: ",") + "}"
        case .textArray(let values):
            // Every element double-quoted, with `\` and `"` escaped: the array literal syntax for any text.
            let elements = values.map { value -> String in
                guard let value else { return "NULL" }
                var quoted = "\""
                for character in Self.checked(value).unicodeScalars {
                    if character == "\\" || character == "\"" { quoted.unicodeScalars.append("\\") }
                    quoted.unicodeScalars.append(character)
                }
                return quoted + "\""
            }
            return "{" + elements.joined(separator: ",") + "}"
        }
    }

    private static let hexDigits: [String] = (0..<256).map { String(format: "%02x", $0) }

    private static func checked(_ text: String) -> String {
        guard text.utf8.contains(0) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { $0 == "\u{0}" ? "\u{FFFD}" : $0 }))
    }
}
