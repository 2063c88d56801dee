import Foundation
import Logging
import PushStore

/// A value bound to a statement parameter.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    /// `.text`, or `.null` for `nil`.
    public static func text(_ value: String?) -> SQLValue { value.map { .text($0) } ?? .null }
    /// `.integer`, or `.null` for `nil`.
    public static func integer(_ value: Int64?) -> SQLValue { value.map { .integer($0) } ?? .null }
    /// A `Date` as integer milliseconds since 1970 (the store's time unit), or `.null`.
    public static func millis(_ date: Date?) -> SQLValue { date.map { .integer($0.millisecondsSince1970) } ?? .null }
    /// A boolean as 0/1.
    public static func bool(_ value: Bool) -> SQLValue { .integer(value ? 1 : 0) }
}
