/// A backend connection that runs `SQLQuery`s, on the thread that owns it and inside whatever transaction the store
/// opened: the one thing a store role written once over this layer needs from SQLite or PostgreSQL.
package protocol SQLConnection {
    /// The backend's row while it is being read (valid only inside the closure it is passed to).
    associatedtype Row: SQLRow

    /// How queries are spelt on this connection.
    var dialect: SQLDialect { get }

    /// Runs a statement to its end and returns how many rows it inserted, changed or deleted.
    @discardableResult
    func perform(_ query: SQLQuery) throws -> Int

    /// Calls `body` with each result row in order.
    func forEachRow(_ query: SQLQuery, _ body: (Row) throws -> Void) throws

    /// The first result row mapped by `transform`, or nil when there is none (the rest are not read).
    func fetchOne<T>(_ query: SQLQuery, _ transform: (Row) throws -> T) throws -> T?
}

extension SQLConnection {
    /// Every result row mapped by `transform`.
    package func fetchAll<T>(_ query: SQLQuery, _ transform: (Row) throws -> T) throws -> [T] {
        var values: [T] = []
        try forEachRow(query) { values.append(try transform($0)) }
        return values
    }
}
