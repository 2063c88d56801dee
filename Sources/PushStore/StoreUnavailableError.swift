import CSQLite

/// The store cannot do its work right now for a reason outside the request: the disk is full, the file system
/// failed or is read-only, another process held the database lock past the busy timeout, or a database file
/// cannot be opened. Nothing of the failed operation was stored, and the same call may succeed once the condition
/// clears, so callers answer "try again later" instead of reporting a bug.
public struct StoreUnavailableError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, as a bounded set (it becomes a metric label).
    public enum Reason: String, Sendable, CaseIterable {
        /// `SQLITE_FULL`: no space left on the device (or the database hit its size limit).
        case diskFull = "disk_full"
        /// `SQLITE_IOERR`: the operating system reported an I/O error.
        case ioError = "io_error"
        /// `SQLITE_READONLY`: the database or its file system cannot be written.
        case readOnly = "read_only"
        /// `SQLITE_BUSY` / `SQLITE_LOCKED` after the busy timeout: another process holds the database lock.
        case busy
        /// `SQLITE_CANTOPEN`: a database file (the `-wal`, the `-shm`, a temporary file) cannot be opened.
        case cannotOpen = "cannot_open"
    }

    public var reason: Reason
    /// The backend's own message (`database or disk is full`), for the operator's log; never sent to clients.
    public var detail: String

    public init(_ reason: Reason, detail: String) {
        self.reason = reason
        self.detail = detail
    }

    /// The unavailability `error` stands for, or nil when it is any other failure (a constraint, a bug).
    public init?(_ error: any Error) {
        if let error = error as? StoreUnavailableError {
            self = error
            return
        }
        guard let error = error as? SQLiteError else { return nil }
        switch error.code {
        case SQLITE_FULL: reason = .diskFull
        case SQLITE_IOERR: reason = .ioError
        case SQLITE_READONLY: reason = .readOnly
        case SQLITE_BUSY, SQLITE_LOCKED: reason = .busy
        case SQLITE_CANTOPEN: reason = .cannotOpen
        default: return nil
        }
        detail = error.message
    }

    public var description: String { "store unavailable (\(reason.rawValue)): \(detail)" }
}

/// What the store learned about its own health from one unit of work (see
/// `SQLitePushStore.Configuration.healthEvents`).
public enum StoreHealthEvent: Sendable, Equatable {
    /// A transaction that changed data (or a probe) committed: the store can write.
    case wrote
    /// An operation failed because the store is unavailable.
    case failed(StoreUnavailableError)
}
