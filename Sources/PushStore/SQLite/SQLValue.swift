import Foundation
import Logging

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

extension Date {
    /// Whole milliseconds since 1970, rounded down: the unit every timestamp column uses. Saturates at
    /// `Int64.min`/`Int64.max` (NaN reads as 0): dates built from client or APNs numbers can be far outside any
    /// real time, and must be stored (or refused by the caller), never trap.
    public var millisecondsSince1970: Int64 { Int64(saturating: (timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The date `milliseconds` after 1970.
    public init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension Duration {
    /// Whole milliseconds, rounded toward zero, saturating at `Int64`'s range.
    var milliseconds: Int64 {
        let parts = components
        let (scaled, overflow) = parts.seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return parts.seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(parts.attoseconds / 1_000_000_000_000_000)
        if overflow2 { return parts.seconds < 0 ? .min : .max }
        return sum
    }
}
