import Foundation
import PushStore

/// A statement parameter, sent in libpq's text format (SQL casts in the statement give it its type).
enum PGValue: Sendable, Equatable {
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
    /// - Throws: `PostgreSQLError` (SQLSTATE 22021) for text with a NUL character, which PostgreSQL's text type
    ///   cannot hold (a C string would silently cut it off).
    func encoded() throws -> String? {
        switch self {
        case .null: return nil
        case .text(let text): return try Self.checked(text)
        case .integer(let value): return String(value)
        case .bytes(let data): return "\\x" + data.map { Self.hexDigits[Int($0)] }.joined()
        case .integerArray(let values):
            return "{" + values.map { $0.map { String($0) } ?? "NULL" }.joined(separator: ",") + "}"
        case .textArray(let values):
            // Every element double-quoted, with `\` and `"` escaped: the array literal syntax for any text.
            let elements = try values.map { value -> String in
                guard let value else { return "NULL" }
                var quoted = "\""
                for character in try Self.checked(value).unicodeScalars {
                    if character == "\\" || character == "\"" { quoted.unicodeScalars.append("\\") }
                    quoted.unicodeScalars.append(character)
                }
                return quoted + "\""
            }
            return "{" + elements.joined(separator: ",") + "}"
        }
    }

    private static let hexDigits: [String] = (0..<256).map { String(format: "%02x", $0) }

    private static func checked(_ text: String) throws -> String {
        if text.utf8.contains(0) {
            throw PostgreSQLError(sqlstate: "22021", message: "text parameter contains a NUL character")
        }
        return text
    }
}
