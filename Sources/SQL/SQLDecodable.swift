import Foundation

/// A Swift type a column value converts to; `nil` when the value does not fit.
package protocol SQLDecodable {
    init?(sqlValue: SQLValue)
}

extension Optional: SQLDecodable where Wrapped: SQLDecodable {
    /// `nil` for NULL, else the wrapped type's reading (which may refuse).
    package init?(sqlValue: SQLValue) {
        if case .null = sqlValue {
            self = .none
            return
        }
        guard let wrapped = Wrapped(sqlValue: sqlValue) else { return nil }
        self = .some(wrapped)
    }
}

extension Int64: SQLDecodable {
    /// An integer; also integer text (PostgreSQL's `numeric`, such as the sum of a bigint column) and a boolean as
    /// 0/1.
    package init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .integer(let value): self = value
        case .text(let text): guard let value = Int64(text) else { return nil }; self = value
        case .bool(let value): self = value ? 1 : 0
        default: return nil
        }
    }
}

extension Int: SQLDecodable {
    /// As `Int64`.
    package init?(sqlValue: SQLValue) {
        guard let value = Int64(sqlValue: sqlValue), let int = Int(exactly: value) else { return nil }
        self = int
    }
}

extension Double: SQLDecodable {
    /// A real or an integer.
    package init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .real(let value): self = value
        case .integer(let value): self = Double(value)
        default: return nil
        }
    }
}

extension String: SQLDecodable {
    /// Text only: a number is not silently read as its digits.
    package init?(sqlValue: SQLValue) {
        guard case .text(let text) = sqlValue else { return nil }
        self = text
    }
}

extension Data: SQLDecodable {
    /// A blob only.
    package init?(sqlValue: SQLValue) {
        guard case .blob(let data) = sqlValue else { return nil }
        self = data
    }
}

extension Bool: SQLDecodable {
    /// A boolean, or SQLite's integer 0/1.
    package init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .bool(let value): self = value
        case .integer(0): self = false
        case .integer(1): self = true
        default: return nil
        }
    }
}
