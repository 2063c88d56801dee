import Foundation
import PushStore
import SQL

/// The store's time unit on both backends: a `Date` is kept as integer milliseconds since 1970.
extension SQLQuery.StringInterpolation {
    /// A date as an integer parameter of milliseconds since 1970 (NULL when nil).
    package mutating func appendInterpolation(_ date: Date?) {
        appendInterpolation(date?.millisecondsSince1970)
    }
}

extension SQLRow {
    /// A millisecond column as a date.
    /// - Throws: `SQLDecodingError` when it is NULL, missing or not an integer.
    package func date(_ name: String) throws(SQLDecodingError) -> Date {
        Date(millisecondsSince1970: try decode(name, as: Int64.self))
    }

    /// A millisecond column as a date, nil for NULL.
    /// - Throws: `SQLDecodingError` when it is missing or not an integer.
    package func optionalDate(_ name: String) throws(SQLDecodingError) -> Date? {
        try decode(name, as: Int64?.self).map(Date.init(millisecondsSince1970:))
    }
}

extension SQLRow {
    /// The millisecond column at `index` as a date (for rows read by position, such as `DeviceSQL.columns`).
    /// - Throws: `SQLDecodingError` when it is NULL, missing or not an integer.
    package func date(_ index: Int) throws(SQLDecodingError) -> Date {
        Date(millisecondsSince1970: try decode(index, as: Int64.self))
    }

    /// The millisecond column at `index` as a date, nil for NULL.
    /// - Throws: `SQLDecodingError` when it is missing or not an integer.
    package func optionalDate(_ index: Int) throws(SQLDecodingError) -> Date? {
        try decode(index, as: Int64?.self).map(Date.init(millisecondsSince1970:))
    }
}
