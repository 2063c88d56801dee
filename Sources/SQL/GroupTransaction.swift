/// The statements a group transaction is made of on one backend's connection: what `GroupCommit` runs its writes
/// between. One savepoint is open at a time, around the write being run; a backend names it as it likes.
package protocol GroupTransaction {
    /// Opens the transaction (SQLite: `BEGIN IMMEDIATE`, which takes the write lock at once; PostgreSQL: `BEGIN`).
    func begin() throws

    /// Opens the savepoint of the next write.
    func savepoint() throws

    /// Undoes what the write in the open savepoint did, keeping what the writes before it did.
    func rollbackToSavepoint() throws

    /// Ends the open savepoint, keeping what is in it (nothing, after `rollbackToSavepoint`).
    func releaseSavepoint() throws

    /// Commits the transaction.
    func commit() throws

    /// Ends a transaction that failed. Best effort, so it does not throw: the batch has failed already, and a backend
    /// whose connection broke drops it instead.
    func rollback()

    /// Whether the transaction is still open after a write failed. A backend may have rolled it back whole on its
    /// own (SQLite after a disk-full or I/O error), taking the writes kept before it along: then the batch fails.
    var isOpen: Bool { get }
}

/// What a group transaction does with a write that threw, as the backend classifies the error (`GroupCommit`).
package enum GroupWriteFailure: Sendable, Equatable {
    /// The write is rolled back to its savepoint, the others commit, then it fails with its error.
    case failAfterCommit
    /// The write is rolled back to its savepoint, the others commit, then it is handed back to run again in a
    /// transaction of its own: it conflicted with another transaction, which a fresh one may not meet.
    case runAgainAlone
    /// The transaction cannot go on (its connection is lost): the batch fails with the error.
    case abortBatch
}
