import Foundation
import PushStore
import SQL

/// The store's bindings for optional values, kept for the statements not yet written as `SQLQuery`.
extension SQLValue {
    /// `.text`, or `.null` for `nil`.
    package static func text(_ value: String?) -> SQLValue { value.map { .text($0) } ?? .null }
    /// `.integer`, or `.null` for `nil`.
    package static func integer(_ value: Int64?) -> SQLValue { value.map { .integer($0) } ?? .null }
    /// A `Date` as integer milliseconds since 1970 (the store's time unit), or `.null`.
    package static func millis(_ date: Date?) -> SQLValue { date.map { .integer($0.millisecondsSince1970) } ?? .null }
}
