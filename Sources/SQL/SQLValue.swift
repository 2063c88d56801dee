import Foundation

/// A value bound to a statement parameter, or read from a result column.
///
/// The same five kinds on every backend, plus `bool`: SQLite keeps a boolean as the integer 0 or 1 and PostgreSQL as
/// `boolean`, so a backend maps it where it binds (see `SQLDialect`).
package enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
    case bool(Bool)

    /// The kind of a non-null value; nil for `.null`.
    package var type: SQLType? {
        switch self {
        case .null: return nil
        case .integer: return .integer
        case .real: return .real
        case .text: return .text
        case .blob: return .blob
        case .bool: return .bool
        }
    }
}

/// The declared kind of a parameter: what a Swift type interpolated into an `SQLQuery` says, even when its value is
/// nil, so that a statement's text (and so its prepared form) does not change with the values bound to it.
package enum SQLType: String, Sendable, Hashable, CaseIterable {
    case integer
    case real
    case text
    case blob
    case bool
}
