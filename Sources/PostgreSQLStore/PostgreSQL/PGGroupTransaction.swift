import SQL

/// A connection thread's side of `GroupCommit`: PostgreSQL's transaction statements on the session's connection,
/// which is dropped, not rolled back, once it broke.
///
/// Belongs to the pool thread that owns the session, like the connection.
struct PGGroupTransaction: GroupTransaction {
    let connection: PGConnection
    let session: PGSession

    func begin() throws { try connection.execute("BEGIN") }
    func savepoint() throws { try connection.execute("SAVEPOINT w") }
    func rollbackToSavepoint() throws { try connection.execute("ROLLBACK TO SAVEPOINT w") }
    func releaseSavepoint() throws { try connection.execute("RELEASE SAVEPOINT w") }
    func commit() throws { try connection.execute("COMMIT") }

    func rollback() {
        if connection.isUsable {
            _ = try? connection.execute("ROLLBACK")
        } else {
            session.drop()
        }
    }

    /// A failed statement leaves PostgreSQL's transaction open (aborted until rolled back to the savepoint); it is
    /// gone only with the connection.
    var isOpen: Bool { connection.inTransaction }
}
