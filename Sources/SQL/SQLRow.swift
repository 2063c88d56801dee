/// One result row as a backend hands it over, read by column index or name into Swift types.
///
/// A backend supplies the columns' names and values (SQLite by its storage classes, PostgreSQL by each column's type);
/// `decode` is written once here, so both read a row the same way and fail the same way.
package protocol SQLRow {
    /// How many columns the row has.
    var columnCount: Int { get }
    /// The name of column `index` (0-based), as the SELECT list gave it.
    func columnName(at index: Int) -> String
    /// The value of column `index` (0-based, below `columnCount`).
    func value(at index: Int) -> SQLValue

    /// Column `index` as text: `decode(_:as: String.self)`, with its errors. A requirement, so that a backend can
    /// answer it without building an `SQLValue` and without the generic `decode`, which a caller in another module
    /// runs unspecialised (about 1,100 instructions a column; a fan-out reads every target through these).
    func text(at index: Int) throws(SQLDecodingError) -> String
    /// Column `index` as text or nil for NULL: `decode(_:as: String?.self)`, as `text(at:)`.
    func optionalText(at index: Int) throws(SQLDecodingError) -> String?
    /// Column `index` as an integer: `decode(_:as: Int64.self)`, as `text(at:)`.
    func integer(at index: Int) throws(SQLDecodingError) -> Int64
}

extension SQLRow {
    /// `decode(_:as: String.self)`.
    package func text(at index: Int) throws(SQLDecodingError) -> String { try decode(index) }
    /// `decode(_:as: String?.self)`.
    package func optionalText(at index: Int) throws(SQLDecodingError) -> String? { try decode(index) }
    /// `decode(_:as: Int64.self)`.
    package func integer(at index: Int) throws(SQLDecodingError) -> Int64 { try decode(index) }
}

extension SQLRow {
    /// Column `index` as `T`.
    /// - Throws: `SQLDecodingError` when there is no such column, it is NULL and `T` is not optional, or its value
    ///   does not fit `T`.
    package func decode<T: SQLDecodable>(_ index: Int, as type: T.Type = T.self) throws(SQLDecodingError) -> T {
        guard index >= 0, index < columnCount else { throw .noSuchColumn(String(index)) }
        let value = value(at: index)
        if let decoded = T(sqlValue: value) { return decoded }
        let column = columnName(at: index)
        guard value != .null else { throw .unexpectedNull(column: column) }
        throw .typeMismatch(column: column, expected: String(describing: T.self), found: value.type ?? .text)
    }

    /// The column named `name` as `T` (the first such column).
    /// - Throws: `SQLDecodingError` as `decode(_:as:)` does.
    package func decode<T: SQLDecodable>(_ name: String, as type: T.Type = T.self) throws(SQLDecodingError) -> T {
        guard let index = (0..<columnCount).first(where: { columnName(at: $0) == name }) else {
            throw .noSuchColumn(name)
        }
        return try decode(index, as: type)
    }
}

/// Why a column could not be read as the type asked for.
package enum SQLDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No column has that index or name.
    case noSuchColumn(String)
    /// The column is NULL and the type asked for is not optional.
    case unexpectedNull(column: String)
    /// The column's value is of another kind.
    case typeMismatch(column: String, expected: String, found: SQLType)

    package var description: String {
        switch self {
        case .noSuchColumn(let column): return "no column \(column) in the result"
        case .unexpectedNull(let column): return "column \(column) is NULL"
        case .typeMismatch(let column, let expected, let found):
            return "column \(column) holds \(found.rawValue), not \(expected)"
        }
    }
}
