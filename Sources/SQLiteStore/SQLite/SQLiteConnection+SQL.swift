import CSQLite
import SQL

/// SQLite runs the shared `SQLQuery`s through the connection's cached statements: rendered with `?` placeholders,
/// bound, stepped, and read row by row through `SQLiteRow`.
extension SQLiteConnection: SQLConnection {
    package var dialect: SQLDialect { .sqlite }

    @discardableResult
    package func perform(_ query: SQLQuery) throws -> Int {
        let (text, values) = query.rendered(in: .sqlite)
        return try run(text, values)
    }

    package func forEachRow(_ query: SQLQuery, _ body: (SQLiteRow) throws -> Void) throws {
        let (text, values) = query.rendered(in: .sqlite)
        try self.query(text, values) { statement in try body(SQLiteRow(statement: statement)) }
    }

    package func fetchOne<T>(_ query: SQLQuery, _ transform: (SQLiteRow) throws -> T) throws -> T? {
        let (text, values) = query.rendered(in: .sqlite)
        return try first(text, values) { statement in try transform(SQLiteRow(statement: statement)) }
    }
}

/// The current row of a stepped statement, its values by SQLite's storage class. Valid only until the next step.
package struct SQLiteRow: SQLRow {
    let statement: Statement

    package var columnCount: Int { statement.columnCount }
    package func columnName(at index: Int) -> String { statement.columnName(Int32(index)) }
    package func value(at index: Int) -> SQLValue { statement.value(Int32(index)) }

    /// Straight from the column when it holds text; anything else (NULL, another class, no such column) takes
    /// `decode`, for its error.
    package func text(at index: Int) throws(SQLDecodingError) -> String {
        guard storageClass(index) == SQLITE_TEXT else { return try decode(index) }
        return statement.text(Int32(index))
    }

    /// As `text(at:)`; NULL reads as nil.
    package func optionalText(at index: Int) throws(SQLDecodingError) -> String? {
        switch storageClass(index) {
        case SQLITE_TEXT: return statement.text(Int32(index))
        case SQLITE_NULL: return nil
        default: return try decode(index)
        }
    }

    /// As `text(at:)`, for an integer column.
    package func integer(at index: Int) throws(SQLDecodingError) -> Int64 {
        guard storageClass(index) == SQLITE_INTEGER else { return try decode(index) }
        return statement.int64(Int32(index))
    }

    /// The storage class of column `index`, or -1 when there is no such column (`decode` then says so).
    private func storageClass(_ index: Int) -> Int32 {
        guard index >= 0, index < statement.columnCount else { return -1 }
        return statement.storageClass(Int32(index))
    }
}

@available(*, unavailable, message: "A row belongs to its statement's thread")
extension SQLiteRow: Sendable {}
