/// The store cannot do its work right now for a reason outside the request: the disk is full, the file system
/// failed or is read-only, another process held the database lock past the busy timeout, a database file
/// cannot be opened, or the database server cannot be reached. Nothing of the failed operation was stored, and the same call may succeed once the condition
/// clears, so callers answer "try again later" instead of reporting a bug.
package struct StoreUnavailableError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, as a bounded set (it becomes a metric label).
    package enum Reason: String, Sendable, CaseIterable {
        /// No space left on the device, or the store hit its size limit (SQLite: `SQLITE_FULL`).
        case diskFull = "disk_full"
        /// The operating system reported an I/O error (`SQLITE_IOERR`).
        case ioError = "io_error"
        /// The database or its file system cannot be written (`SQLITE_READONLY`).
        case readOnly = "read_only"
        /// Another process held the database lock past the busy timeout (`SQLITE_BUSY` / `SQLITE_LOCKED`).
        case busy
        /// A database file (the `-wal`, the `-shm`, a temporary file) cannot be opened (`SQLITE_CANTOPEN`).
        case cannotOpen = "cannot_open"
        /// The database server cannot be reached, or the connection to it broke (PostgreSQL: no connection,
        /// SQLSTATE class 08, an administrator or crash shutdown).
        case unreachable
    }

    package var reason: Reason
    /// The backend's own message (`database or disk is full`), for the operator's log; never sent to clients.
    package var detail: String

    package init(_ reason: Reason, detail: String) {
        self.reason = reason
        self.detail = detail
    }

    /// `error` as an unavailability, or nil when it is any other failure (a constraint, a bug). Backends convert
    /// their own errors before throwing (SQLite: `StoreUnavailableError(sqlite:)`), so callers only unwrap.
    package init?(_ error: any Error) {
        guard let error = error as? StoreUnavailableError else { return nil }
        self = error
    }

    package var description: String { "store unavailable (\(reason.rawValue)): \(detail)" }
}

/// What the store learned about its own health from one unit of work (see
/// `SQLitePushStore.Configuration.healthEvents`).
package enum StoreHealthEvent: Sendable, Equatable {
    /// A transaction that changed data (or a probe) committed: the store can write.
    case wrote
    /// An operation failed because the store is unavailable.
    case failed(StoreUnavailableError)
}
