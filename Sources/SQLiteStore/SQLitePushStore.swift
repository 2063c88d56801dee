import Foundation
import Locking
import Logging
import PushStore
import StoreSQL

/// The SQLite implementation of `PushStorage`.
///
/// One writer thread owns the only read-write connection and commits queued writes in groups; a few reader
/// threads own read-only connections (WAL lets them read while the writer writes). Callers only see `async`
/// functions backed by continuations, so no SQLite call ever runs on the Swift concurrency pool.
package final class SQLitePushStore: PushStorage, SQLStoreBackend, QuotaUsageReading {
    /// How to open the store. Every field has a documented default.
    package struct Configuration: Sendable {
        /// The database file; created when missing.
        package var path: String
        /// `PRAGMA synchronous`. Default `.normal`: in WAL mode a committed write survives a process crash
        /// (`kill -9`) but the newest commits may be lost on power loss; `.full` also survives power loss.
        package var synchronous: SQLiteConnection.Synchronous = .normal
        /// Reader threads (one connection each). Default 2.
        package var readerCount: Int = 2
        /// How long a connection waits for a lock held by another process. Default 5 s.
        package var busyTimeout: Duration = .seconds(5)
        /// The most write operations one group-commit transaction takes. Default 512.
        package var maxBatchSize: Int = 512
        /// The most rows (as the operations estimate them) one group-commit transaction takes, unless its first
        /// operation alone is dearer. Default 4,096: what a write queued behind a batch waits for stays a few
        /// milliseconds, whoever filled it.
        package var maxBatchCost: Int = 4096
        /// How long the writer keeps adding queued writes to an open transaction. Default 2 ms: a write that
        /// arrives behind a transaction waits for about this, one write in progress and one COMMIT, whatever another
        /// tenant has queued (a newcomer's write, `FairBatches`, waits for no budget), and the COMMIT writes what the
        /// transaction changed; longer transactions buy little throughput (one COMMIT costs about as much as a few
        /// one-row writes).
        package var maxBatchDuration: Duration = .milliseconds(2)
        /// The writer's page cache in KiB. Default 64 MiB: a group transaction dirties pages all over the random-key
        /// token index, and with SQLite's 2 MiB default they spill to the WAL mid-transaction and are written
        /// again at COMMIT (StoreBench measured ~60 GB written for a 1M-device load).
        package var writerCacheSizeKiB: Int = 65_536
        /// Copy the WAL back into the database once it holds this many pages. Default 1000 (SQLite's). A larger
        /// value lets a page changed by several commits be copied once.
        package var walAutocheckpointPages: Int = 1000
        /// Whether those checkpoints run on a thread and connection of their own (`WALCheckpointer`) instead of
        /// inside the writer's COMMIT (`PRAGMA wal_autocheckpoint`), where every queued write waits for their
        /// syncs. Default true.
        package var backgroundCheckpoints = true
        /// Each reader's page cache in KiB; `nil` keeps SQLite's default (2 MiB). Default `nil`: reads of cold
        /// pages come from the OS page cache either way.
        package var readerCacheSizeKiB: Int? = nil
        /// The time source for `created_at`/`last_registered_at`. Default: the system clock.
        package var clock: @Sendable () -> Date = { Date() }
        /// Holds `<path>.lock` (`DatabaseLock`) while open, so a second store on the same database fails to open;
        /// and, since no other process can then be running publishes, the leases of publishes left running are
        /// expired at open: a server restarted after a crash resumes them at once instead of after the lease.
        /// Default false (the server sets it; a tool that reads the database beside a running server must not).
        package var exclusive = false
        /// Default: no logging.
        package var logger: Logger = .disabled
        /// Hears what each write showed about the store's health: `.wrote` after a commit that changed data,
        /// `.failed` when a write or read failed because the store is unavailable (a full disk, an I/O error, …).
        /// Called on the store's threads; keep it cheap. Default: ignored.
        package var healthEvents: @Sendable (StoreHealthEvent) -> Void = { _ in }
        /// After writes failed, a commit reports the store writable again only while the database's file system
        /// has this many bytes free (`FileSystemRoom`): on a disk at the edge of full a small commit still fits
        /// where failed ones left pages allocated, and `/ready` would flap. 0 turns the check off. Default 256 KiB
        /// (64 pages).
        package var minimumFreeBytesToRecover: Int64 = 256 * 1024

        package init(path: String) { self.path = path }
    }

    private let writer: WriterThread
    private let readers: ReaderPool
    private let threadsDone: CountdownLatch
    private let lock: DatabaseLock?
    private let checkpointer: WALCheckpointer?
    package let clock: @Sendable () -> Date
    /// For exports, which read on a connection of their own (`exportDevices`).
    let path: String
    let busyTimeout: Duration
    private let logger: Logger
    private let healthEvents: @Sendable (StoreHealthEvent) -> Void
    /// SQLite's spelling of `publish_jobs` (an ended state kept in `ended_as`, targets as a JSON array).
    package static var publishSchema: PublishSchema { .sqlite }
    /// Interest writes of one device take turns, so one written in steps is never interleaved with another.
    let interestTurns = KeyedTurns<String>()

    private init(
        writer: WriterThread, readers: ReaderPool, threadsDone: CountdownLatch, lock: DatabaseLock?,
        checkpointer: WALCheckpointer?, configuration: Configuration
    ) {
        self.writer = writer
        self.readers = readers
        self.threadsDone = threadsDone
        self.lock = lock
        self.checkpointer = checkpointer
        self.clock = configuration.clock
        self.path = configuration.path
        self.busyTimeout = configuration.busyTimeout
        self.logger = configuration.logger
        self.healthEvents = configuration.healthEvents
    }

    /// Opens the database, upgrading its schema, and starts the store's threads. A missing directory is created
    /// `0700` and a missing database file `0600`; existing database files open to other users are tightened.
    /// - Throws: `PushStoreError.unsupportedSchemaVersion` for a database written by a newer program;
    ///   `StoreUnavailableError` when the files cannot be created or the database can only be read;
    ///   `SQLiteError` when the file cannot be opened or migrated.
    package static func open(_ configuration: Configuration) async throws -> SQLitePushStore {
        try await open(configuration, migrator: Migrator())
    }

    static func open(_ configuration: Configuration, migrator: Migrator) async throws -> SQLitePushStore {
        let readerCount = max(1, configuration.readerCount)
        let threadsDone = CountdownLatch(count: 1 + readerCount + (configuration.backgroundCheckpoints ? 1 : 0))
        let logger = configuration.logger.named("store")
        try DatabaseFiles.prepare(configuration.path, logger: logger)
        // Released by `close()`, or on the way out of here when opening fails.
        let lock = configuration.exclusive ? try DatabaseLock(database: configuration.path) : nil
        let gate = configuration.backgroundCheckpoints ? WALRestartGate() : nil
        let checkpointer =
            gate.map { gate in
                WALCheckpointer(
                    thresholdFrames: configuration.walAutocheckpointPages, gate: gate,
                    busyTimeout: configuration.busyTimeout, logger: logger,
                    open: {
                        let connection = try SQLiteConnection(path: configuration.path)
                        try connection.configure(
                            busyTimeout: configuration.busyTimeout, synchronous: configuration.synchronous,
                            cacheSizeKiB: nil)
                        // A connection finds the WAL when it first reads; until then a checkpoint on it does nothing.
                        _ = try connection.first("SELECT count(*) FROM sqlite_schema") { $0.int64(0) }
                        return connection
                    },
                    finished: { threadsDone.arrive($0) })
            }

        let writerReady = CountdownLatch(count: 1)
        let writer = WriterThread(
            maxBatch: max(1, configuration.maxBatchSize), maxBatchCost: max(1, configuration.maxBatchCost),
            maxBatchDuration: configuration.maxBatchDuration,
            betweenTransactions: { connection in checkpointer?.catchUp(on: connection) },
            logger: logger, health: configuration.healthEvents,
            hasRoom: {
                [
                    room = FileSystemRoom(
                        path: configuration.path,
                        minimumFreeBytes: configuration.minimumFreeBytesToRecover)
                ] in
                room.hasRoom
            },
            open: {
                let connection = try SQLiteConnection(path: configuration.path)
                do {
                    // SQLite falls back to read-only when the file cannot be opened for writing; a server that can
                    // never store anything must not start as if it could.
                    if connection.isReadOnly {
                        throw StoreUnavailableError(
                            .readOnly,
                            detail: "the database \(configuration.path) can only be "
                                + "opened read-only (file permissions, owner, or a read-only file system)")
                    }
                    // WAL is a property of the file; set it before anything else touches the schema.
                    let mode = try connection.first("PRAGMA journal_mode = WAL") { $0.text(0) }
                    if mode?.lowercased() != "wal" {
                        logger.warning("Database is not in WAL mode", ["mode": mode ?? "unknown"])
                    }
                    try connection.configure(
                        busyTimeout: configuration.busyTimeout, synchronous: configuration.synchronous,
                        cacheSizeKiB: configuration.writerCacheSizeKiB)
                    // Every write runs in a savepoint, so SQLite first copies each page it changes to a
                    // sub-journal, which past 64 KiB spills to a temporary file: under an interest flood two thirds
                    // of the writer's system calls were those copies (strace, `bench/noisy/run.sh`). In memory the
                    // sub-journal holds at most the pages of one write (an interest step is 32 names).
                    try connection.execute("PRAGMA temp_store = MEMORY")
                    if let checkpointer {
                        connection.onWALCommit { checkpointer.onCommit(walFrames: $0) }
                    } else {
                        try connection.execute("PRAGMA wal_autocheckpoint = \(configuration.walAutocheckpointPages)")
                    }
                    try migrator.migrate(connection, logger: logger)
                    if lock != nil { try expireDeadLeases(connection, now: configuration.clock(), logger: logger) }
                } catch {
                    try? connection.close()
                    throw error
                }
                return connection
            },
            ready: { writerReady.arrive($0.failure) },
            finished: { threadsDone.arrive($0) })
        if let error = await writerReady.wait().first {
            checkpointer?.shutdown()
            throw error
        }
        // Once the writer has put the database in WAL mode.
        checkpointer?.start()

        let readersReady = CountdownLatch(count: readerCount)
        let readers = ReaderPool(
            count: readerCount,
            gate: gate,
            open: {
                let connection = try SQLiteConnection(path: configuration.path, readOnly: true)
                do {
                    try connection.configure(
                        busyTimeout: configuration.busyTimeout, synchronous: configuration.synchronous,
                        cacheSizeKiB: configuration.readerCacheSizeKiB)
                } catch {
                    try? connection.close()
                    throw error
                }
                return connection
            },
            ready: { readersReady.arrive($0.failure) },
            finished: { threadsDone.arrive($0) })
        if let error = await readersReady.wait().first {
            writer.shutdown()
            readers.shutdown()
            checkpointer?.shutdown()
            // Threads that failed to open already counted themselves as finished.
            _ = await threadsDone.wait()
            throw error
        }
        logger.info("Store opened", ["path": configuration.path, "readers": String(readerCount)])
        return SQLitePushStore(
            writer: writer, readers: readers, threadsDone: threadsDone, lock: lock, checkpointer: checkpointer,
            configuration: configuration)
    }

    /// Under the database lock every lease belongs to a process that is gone: its publishes become claimable now.
    private static func expireDeadLeases(_ connection: SQLiteConnection, now: Date, logger: Logger) throws {
        let expired = try connection.run(
            "UPDATE publish_jobs SET lease_expires_at = ? WHERE state = 'running' AND lease_expires_at > ?",
            [.millis(now), .millis(now)])
        if expired > 0 {
            logger.notice("Resuming publishes a stopped process left running", ["publishes": String(expired)])
        }
    }

    deinit {
        // A backstop for a store dropped without `close()`: let the threads drain, close their connections and
        // exit instead of waiting forever. Their close errors go unreported; owners call `close()`.
        writer.shutdown()
        readers.shutdown()
        checkpointer?.shutdown()
    }

    /// Lets queued work finish, then closes every connection. Idempotent.
    /// - Throws: the first error a connection reported while closing.
    package func close() async throws {
        writer.shutdown()
        readers.shutdown()
        checkpointer?.shutdown()
        let errors = await threadsDone.wait()
        lock?.release()
        if let first = errors.first { throw first }
    }

    /// Group-commit counters (for benchmarks and tests).
    package var writerStatistics: WriterStatistics { writer.statistics }

    /// What the writer's restarts of the WAL did (for benchmarks and tests); zero without background checkpoints.
    package var walStatistics: WALStatistics { checkpointer?.statistics ?? WALStatistics() }

    /// Write operations waiting for the writer thread.
    var pendingWrites: Int { writer.pending }

    // MARK: Running work on the store's threads

    /// Runs `body` on the writer thread inside the current group transaction; returns after COMMIT.
    /// If `body` throws, only its own changes are rolled back.
    /// - Parameters:
    ///   - urgent: queued ahead of the waiting writes (a lease renewal: behind a backlog of checkpoints and
    ///     registrations it could wait until the lease ran out), so it waits only for the transaction in progress.
    ///   - tenant: the instance the write is for; writes of different instances share the writer fairly
    ///     (`FairBatches`). `nil`: the publish engine and housekeeping, one tenant of their own.
    ///   - cost: about how many rows `body` writes (at least 1), charged to the tenant's share.
    ///   - continuing: the next step of a larger write of the tenant: it waits for the tenant's turn even when
    ///     nothing else of the tenant is queued, instead of going first as a newcomer's write (`FairBatches`).
    /// - Throws: what `body` threw, or `StoreUnavailableError` when the store cannot write (nothing was stored).
    func write<T: Sendable>(
        isProbe: Bool = false, urgent: Bool = false, tenant: String? = nil, cost: Int = 1, continuing: Bool = false,
        _ body: @escaping @Sendable (SQLiteConnection) throws -> T
    ) async throws -> T {
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                var operation = WriteOperation(
                    run: { connection in
                        let value = try body(connection)
                        return { continuation.resume(returning: value) }
                    },
                    fail: { continuation.resume(throwing: $0) })
                operation.isProbe = isProbe
                // An instance ID is never empty, so "" is the engine's own.
                operation.tenant = tenant ?? ""
                operation.cost = max(1, cost)
                operation.continuing = continuing
                if !writer.submit(operation, urgent: urgent) { continuation.resume(throwing: PushStoreError.closed) }
            }
        } catch {
            // The writer reported the failure to `healthEvents` already.
            throw StoreUnavailableError(sqlite: error) ?? error
        }
    }

    /// Runs a write of a role written once (`SQLStoreBackend`) in the writer's group transaction, for its tenant and
    /// cost; a lease renewal is urgent. A write `.alone` joins the group all the same: under the one writer nothing
    /// interleaves with it, and a write that throws rolls back only its own savepoint.
    package func write<T: Sendable>(
        _ write: StoreWrite, _ body: @escaping @Sendable (SQLiteConnection) throws -> T
    ) async throws -> T {
        try await self.write(urgent: write.queue == .lease, tenant: write.tenant, cost: write.cost, body)
    }

    /// Commits a one-page write that changes no data (the schema version rewritten with its own value), to learn
    /// whether the store can write again after it could not. - Throws: `StoreUnavailableError` while it cannot.
    package func probeWrite() async throws {
        try await write(isProbe: true) { connection in
            try connection.execute("PRAGMA user_version = \(try Migrator.version(of: connection))")
        }
    }

    /// Runs `body` on a reader thread inside one read transaction (one consistent snapshot).
    /// - Throws: what `body` threw, or `StoreUnavailableError` when the database cannot be read right now.
    package func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        do {
            return try await readSnapshot(body)
        } catch {
            guard let unavailable = StoreUnavailableError(sqlite: error) else { throw error }
            healthEvents(.failed(unavailable))
            throw unavailable
        }
    }

    private func readSnapshot<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T
    {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let operation = ReadOperation { connection in
                do {
                    try connection.run("BEGIN")
                    let value: T
                    do {
                        value = try body(connection)
                    } catch {
                        _ = try? connection.run("ROLLBACK")
                        throw error
                    }
                    try connection.run("COMMIT")
                    continuation.resume(returning: value)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            if !readers.submit(operation) { continuation.resume(throwing: PushStoreError.closed) }
        }
    }
}

extension Result {
    /// The error, or `nil` for success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
