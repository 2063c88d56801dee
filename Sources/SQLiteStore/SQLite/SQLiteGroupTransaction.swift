import SQL

/// The writer connection's side of `GroupCommit`: SQLite's transaction statements, and whether SQLite rolled the
/// transaction back on its own.
struct SQLiteGroupTransaction: GroupTransaction {
    let connection: SQLiteConnection

    /// `IMMEDIATE`: the write lock is taken at BEGIN, so no write of the batch meets a busy database halfway.
    func begin() throws { try connection.run("BEGIN IMMEDIATE") }
    func savepoint() throws { try connection.run("SAVEPOINT op") }
    func rollbackToSavepoint() throws { try connection.run("ROLLBACK TO op") }
    func releaseSavepoint() throws { try connection.run("RELEASE op") }
    func commit() throws { try connection.run("COMMIT") }
    func rollback() { _ = try? connection.run("ROLLBACK") }

    /// After a disk-full or I/O error SQLite may have rolled back the whole transaction (it is back in autocommit):
    /// the other writes' changes are gone too, so the batch fails with the cause.
    var isOpen: Bool { !connection.isAutocommit }
}
