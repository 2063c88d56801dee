import Foundation

/// A Swift type that binds as one statement parameter: its value, and its declared type (kept when the value is nil).
public protocol SQLBindable {
    /// The value bound.
    var sqlValue: SQLValue { get }
    /// The parameter's type, whatever the value.
    static var sqlType: SQLType { get }
}

extension Int64: SQLBindable {
    public var sqlValue: SQLValue { .integer(self) }
    public static var sqlType: SQLType { .integer }
}

extension Int: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
    public static var sqlType: SQLType { .integer }
}

extension Int32: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
    public static var sqlType: SQLType { .integer }
}

extension Double: SQLBindable {
    public var sqlValue: SQLValue { .real(self) }
    public static var sqlType: SQLType { .real }
}

extension String: SQLBindable {
    public var sqlValue: SQLValue { .text(self) }
    public static var sqlType: SQLType { .text }
}

extension Data: SQLBindable {
    public var sqlValue: SQLValue { .blob(self) }
    public static var sqlType: SQLType { .blob }
}

extension Bool: SQLBindable {
    public var sqlValue: SQLValue { .bool(self) }
    public static var sqlType: SQLType { .bool }
}
