/// One end of a store move: a database opened raw (not through the store), read in one snapshot or written in
/// one transaction. `SQLiteSide` and `PostgreSQLSide` implement it; `StoreCopier` drives two of them.
///
/// Not thread-safe: one side is used by the thread running the copy.
package protocol StoreSide: AnyObject {
    var backend: Backend { get }
    /// The newest schema version applied, and the newest this program knows.
    func schemaVersion() throws -> (found: Int, newest: Int)
    /// Every table of the database.
    func tableNames() throws -> [String]
    /// The columns of one table.
    func columnNames(_ table: String) throws -> [String]
    /// Starts a read-only snapshot: every read until `endSnapshot` sees the same committed state.
    func beginSnapshot() throws
    func endSnapshot() throws
    /// Rows of one portable table.
    func count(_ table: CopyTable) throws -> Int64
    /// Every row of `table` in key order, its portable columns in order.
    func read(_ table: CopyTable, _ row: ([PortableValue]) throws -> Void) throws
    /// The id counter's high-water mark (beyond the largest id present when rows were deleted), or nil.
    func sequenceMark(_ table: CopyTable) throws -> Int64?
    /// Shards of publishes still being delivered (0 on SQLite, which has none).
    func openShards() throws -> Int64

    /// Starts the one write transaction of a copy; with `replace` it first deletes every row the copy writes.
    func beginLoad(replace: Bool) throws
    /// Writes `table`'s rows; `produce` calls the given function once per row.
    func load(_ table: CopyTable, _ produce: (_ write: ([PortableValue]) throws -> Void) throws -> Void) throws
    /// Moves id counters past the copied ids (and to `marks`, table name → mark) and commits.
    func commitLoad(marks: [String: Int64]) throws
    /// Rolls the write transaction back (after a failure).
    func rollbackLoad()
}

extension StoreSide {
    /// Non-empty tables among those the copy writes (portable name → rows).
    func nonEmptyTables() throws -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for table in CopyPlan.tables {
            let rows = try count(table)
            if rows > 0 { counts[table.name] = rows }
        }
        return counts
    }
}
