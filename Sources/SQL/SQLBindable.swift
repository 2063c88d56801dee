import Foundation

/// A Swift type that binds as one statement parameter: its value, and its declared type (kept when the value is nil).
package protocol SQLBindable {
    /// The value bound.
    var sqlValue: SQLValue { get }
    /// The parameter's type, whatever the value.
    static var sqlType: SQLType { get }
}

extension Int64: SQLBindable {
    package var sqlValue: SQLValue { .integer(self) }
    package static var sqlType: SQLType { .integer }
}

extension Int: SQLBindable {
    package var sqlValue: SQLValue { .integer(Int64(self)) }
    package static var sqlType: SQLType { .integer }
}

extension Int32: SQLBindable {
    package var sqlValue: SQLValue { .integer(Int64(self)) }
    package static var sqlType: SQLType { .integer }
}

extension Double: SQLBindable {
    package var sqlValue: SQLValue { .real(self) }
    package static var sqlType: SQLType { .real }
}

extension String: SQLBindable {
    package var sqlValue: SQLValue { .text(self) }
    package static var sqlType: SQLType { .text }
}

extension Data: SQLBindable {
    package var sqlValue: SQLValue { .blob(self) }
    package static var sqlType: SQLType { .blob }
}

extension Bool: SQLBindable {
    package var sqlValue: SQLValue { .bool(self) }
    package static var sqlType: SQLType { .bool }
}
