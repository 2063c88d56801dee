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
}

@available(*, unavailable, message: "A row belongs to its statement's thread")
extension SQLiteRow: Sendable {}
