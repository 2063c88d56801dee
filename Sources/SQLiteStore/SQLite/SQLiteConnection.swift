import CSQLite
import Foundation
import PushStore
import SQL

/// One SQLite connection; the only owner of its `sqlite3*` and of its cached prepared statements.
///
/// Opened with `SQLITE_OPEN_NOMUTEX`: SQLite does no locking of its own, so a connection must be used by one
/// thread at a time. The store gives each connection to exactly one thread for its whole life.
package final class SQLiteConnection {
    /// How durable a COMMIT is (`PRAGMA synchronous`).
    package enum Synchronous: String, Sendable {
        /// In WAL mode a COMMIT survives a process crash (`kill -9`); the last transactions may be lost on power
        /// loss or an OS crash. SQLite's recommended setting for WAL.
        case normal = "NORMAL"
        /// Every COMMIT also fsyncs the WAL, so it survives power loss too, at the price of one fsync per commit
        /// (group commit amortises it).
        case full = "FULL"
    }

    private var handle: OpaquePointer?
    private var cache: [String: Statement] = [:]
    /// What `onWALCommit` installed, kept alive as long as the connection.
    private var walHook: WALHook?
    /// The database file.
    package let path: String

    /// Opens (or creates, unless `readOnly`) the database at `path`.
    /// - Throws: `SQLiteError` when the file cannot be opened.
    package init(path: String, readOnly: Bool = false) throws {
        self.path = path
        var db: OpaquePointer?
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        do {
            try SQLiteConnection.check(rc, db: db, sql: nil)
        } catch {
            // Even a failed open usually allocates a handle that must be released.
            sqlite3_close_v2(db)
            throw error
        }
        guard let db else {
            throw SQLiteError(code: SQLITE_NOMEM, extendedCode: SQLITE_NOMEM, message: "out of memory", sql: nil)
        }
        sqlite3_extended_result_codes(db, 1)
        self.handle = db
    }

    deinit {
        // A backstop only: owners call `close()` and see its errors.
        try? close()
    }

    /// Whether `close()` has been called.
    package var isClosed: Bool { handle == nil }

    /// Finalizes cached statements and closes the connection. Idempotent.
    /// - Throws: `SQLiteError` if SQLite refuses (the handle is then released anyway by `sqlite3_close_v2`
    ///   once any outstanding statements are finalized).
    package func close() throws {
        guard let db = handle else { return }
        for statement in cache.values { statement.finalize() }
        cache.removeAll()
        handle = nil
        // The handle is gone after this call whatever it returns, so the message comes from the code alone.
        try SQLiteConnection.check(sqlite3_close_v2(db), db: nil, sql: nil)
    }

    private var db: OpaquePointer {
        guard let handle else { preconditionFailure("SQLite connection used after close") }
        return handle
    }

    /// Builds the error for `rc`, with SQLite's message for the connection when there is one.
    static func error(_ rc: Int32, db: OpaquePointer?, sql: String?) -> SQLiteError {
        let message: String
        if let db, let text = sqlite3_errmsg(db) {
            message = String(cString: text)
        } else {
            message = String(cString: sqlite3_errstr(rc))
        }
        let extended = db.map { sqlite3_extended_errcode($0) } ?? rc
        return SQLiteError(code: rc & 0xFF, extendedCode: extended, message: message, sql: sql)
    }

    /// Checks a return code of this connection. - Throws: `SQLiteError` with SQLite's message.
    @discardableResult
    package func check(_ rc: Int32, sql: String? = nil) throws -> Int32 {
        try SQLiteConnection.check(rc, db: handle, sql: sql)
    }

    /// The one place where SQLite return codes become errors: OK, ROW and DONE pass, anything else throws
    /// `SQLiteError` with the code, the extended code, `sqlite3_errmsg` and the SQL.
    @discardableResult
    static func check(_ rc: Int32, db: OpaquePointer?, sql: String?) throws -> Int32 {
        switch rc {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE: return rc
        default: throw error(rc, db: db, sql: sql)
        }
    }

    /// Runs one or more statements without results (schema, pragmas, BEGIN/COMMIT).
    package func execute(_ sql: String) throws {
        try check(sqlite3_exec(db, sql, nil, nil, nil), sql: sql)
    }

    /// Prepares a statement the caller owns (and finalizes).
    package func prepare(_ sql: String) throws -> Statement {
        try Statement(db: db, sql: sql)
    }

    /// The cached prepared statement for `sql`, prepared on first use. Callers reset it after use
    /// (`withStatement` does).
    package func cached(_ sql: String) throws -> Statement {
        if let statement = cache[sql] { return statement }
        let statement = try Statement(db: db, sql: sql)
        cache[sql] = statement
        return statement
    }

    /// Runs `body` with the cached statement for `sql` bound to `bindings`, resetting it afterwards.
    package func withStatement<T>(_ sql: String, _ bindings: [SQLValue] = [], _ body: (Statement) throws -> T) throws
        -> T
    {
        let statement = try cached(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        return try body(statement)
    }

    /// Runs a statement to completion and returns the number of rows it changed.
    @discardableResult
    package func run(_ sql: String, _ bindings: [SQLValue] = []) throws -> Int {
        try run(cached(sql), bindings)
    }

    /// Runs `statement` (this connection's, from `cached`) bound to `bindings` to completion, resetting it
    /// afterwards, and returns the number of rows it changed: for a statement run once per item of a batch, looked up
    /// once for the batch (the cache's key is the SQL text, hashed and compared on every look-up).
    @discardableResult
    package func run(_ statement: Statement, _ bindings: [SQLValue]) throws -> Int {
        defer { statement.reset() }
        try statement.bind(bindings)
        while try statement.step() {}
        return Int(sqlite3_changes64(db))
    }

    /// Runs `statement` (this connection's, from `cached`) to completion with its parameters bound by `bind`,
    /// resetting it afterwards, and returns the number of rows it changed: for a statement run once per result of a
    /// checkpoint, which bound through `run(_:_:)` built an array of its values per run (an allocation and its
    /// release per notification).
    @discardableResult
    package func run(_ statement: Statement, binding bind: (Statement) throws -> Void) throws -> Int {
        defer { statement.reset() }
        try bind(statement)
        while try statement.step() {}
        return Int(sqlite3_changes64(db))
    }

    /// Calls `row` for each result row.
    package func query(_ sql: String, _ bindings: [SQLValue] = [], _ row: (Statement) throws -> Void) throws {
        try withStatement(sql, bindings) { statement in
            while try statement.step() { try row(statement) }
        }
    }

    /// The first row mapped by `row`, or `nil` when there is none.
    package func first<T>(_ sql: String, _ bindings: [SQLValue] = [], _ row: (Statement) throws -> T) throws -> T? {
        try withStatement(sql, bindings) { statement in
            try statement.step() ? try row(statement) : nil
        }
    }

    /// The rowid of the last successful INSERT on this connection.
    package var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(db) }

    /// Rows changed by INSERT, UPDATE and DELETE since the connection opened.
    var totalChanges: Int64 { sqlite3_total_changes64(db) }

    /// Whether no transaction is open. After a disk-full or I/O error SQLite may roll the whole transaction back
    /// on its own; this tells.
    var isAutocommit: Bool { sqlite3_get_autocommit(db) != 0 }

    /// Whether SQLite opened the database read-only (it silently does so when the file or its file system cannot
    /// be written).
    var isReadOnly: Bool { sqlite3_db_readonly(db, "main") == 1 }

    /// Calls `onCommit` with the WAL's frame count after each commit that wrote to the WAL, on the committing
    /// thread (`sqlite3_wal_hook`, which replaces SQLite's automatic checkpoint on this connection).
    func onWALCommit(_ onCommit: @escaping (Int) -> Void) {
        let hook = WALHook(onCommit)
        walHook = hook
        sqlite3_wal_hook(
            db,
            { context, _, _, frames in
                if let context { Unmanaged<WALHook>.fromOpaque(context).takeUnretainedValue().onCommit(Int(frames)) }
                return SQLITE_OK
            }, Unmanaged.passUnretained(hook).toOpaque())
    }

    /// Copies the WAL into the database. PASSIVE copies what it can without waiting for, or blocking, other
    /// connections; `restart` waits (busy timeout) for the writer's transaction to end, holds new ones back while it
    /// copies the rest, and starts the WAL over.
    /// - Throws: `SQLiteError` (SQLITE_BUSY when another checkpoint runs, or the wait timed out).
    func checkpoint(restart: Bool) throws {
        let mode = restart ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_PASSIVE
        try check(
            sqlite3_wal_checkpoint_v2(db, nil, mode, nil, nil),
            sql: restart ? "wal_checkpoint(RESTART)" : "wal_checkpoint(PASSIVE)")
    }

    /// A RESTART checkpoint that waits at most `wait` (whole milliseconds; none below one) for other connections
    /// instead of the busy timeout, which is then set to `busyTimeout`.
    /// - Throws: `SQLiteError` (SQLITE_BUSY when a reader outlasted `wait` or another checkpoint runs).
    func restartCheckpoint(waitingAtMost wait: Duration, thenBusyTimeout busyTimeout: Duration) throws {
        try check(sqlite3_busy_timeout(db, Int32(clamping: max(wait.milliseconds, 0))))
        defer { sqlite3_busy_timeout(db, Int32(clamping: busyTimeout.milliseconds)) }
        try checkpoint(restart: true)
    }

    /// Sets the per-connection pragmas every store connection uses.
    func configure(busyTimeout: Duration, synchronous: Synchronous, cacheSizeKiB: Int?) throws {
        try check(sqlite3_busy_timeout(db, Int32(clamping: busyTimeout.milliseconds)))
        try execute("PRAGMA foreign_keys = ON")
        try execute("PRAGMA synchronous = \(synchronous.rawValue)")
        if let cacheSizeKiB { try execute("PRAGMA cache_size = -\(cacheSizeKiB)") }
    }
}

/// The closure behind a connection's WAL hook (a C callback reaches it through its context pointer).
private final class WALHook {
    let onCommit: (Int) -> Void
    init(_ onCommit: @escaping (Int) -> Void) { self.onCommit = onCommit }
}

@available(*, unavailable, message: "A connection opened with SQLITE_OPEN_NOMUTEX belongs to one thread")
extension SQLiteConnection: Sendable {}
