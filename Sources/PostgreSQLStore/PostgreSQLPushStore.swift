import Foundation
import Locking
import Logging
import PushStore
import StoreSQL

/// The PostgreSQL implementation of `PushStorage`, for several stateless nodes sharing one database.
///
/// A small pool of dedicated threads each owns one libpq connection (opened on first use, opened again after it
/// breaks) and runs whole transactions of prepared statements (one more thread and connection renews leases, so a
/// renewal never queues behind result writes); callers only see `async` functions backed by
/// continuations, so no libpq call ever runs on the Swift concurrency pool. Every write commits before its call
/// returns. Conflicts between nodes are settled by the database: unique constraints with `ON CONFLICT` for
/// registrations, `FOR UPDATE SKIP LOCKED` plus leases for the queue and the webhook outbox, a conditional upsert for
/// the provider token; serialization failures and deadlocks run again.
package final class PostgreSQLPushStore: PushStorage, SQLStoreBackend, QuotaUsageReading {
    /// How to connect. Every field but the connection string has a documented default.
    package struct Configuration: Sendable {
        /// A libpq connection string (`host=… dbname=… user=… sslmode=verify-full …` or a `postgresql://` URI).
        /// A secret: never logged.
        package var connectionString: String
        /// Connection threads (one connection each). Default 4.
        package var poolSize: Int = 4
        /// How often one operation runs at most when it meets a serialization failure, a deadlock or a connection
        /// lost before COMMIT. Default 4.
        package var maxAttempts: Int = 4
        /// The most operations a connection thread takes at once; the writes among them share one transaction
        /// (group commit). Default 64.
        package var maxBatchSize: Int = 64
        /// The time source for `created_at`/`last_registered_at`. Default: the system clock.
        package var clock: @Sendable () -> Date = { Date() }
        /// This process's node identity (`engine.nodeId`), held as long as the store is open (`PGNodeLock`): a
        /// second live process under the same identity fails to open, and the leases the identity holds (jobs and
        /// shards a crashed process under it left running) are expired at open, so a restarted node resumes them
        /// at once instead of after the lease. Default nil: the node's identity is per process (`node-<host>-<pid>`).
        package var nodeID: String?
        /// How long open waits for another process's hold on `nodeID` to go (PostgreSQL drops it when that
        /// process's connection closes, at once when it died: the kernel closes its socket). Default 5 s.
        package var nodeIDWait: Duration = .seconds(5)
        /// Default: no logging.
        package var logger: Logger = .disabled
        /// Hears what each operation showed about the store's health: `.wrote` after a write committed, `.failed`
        /// when an operation failed because the database is unavailable. Called on the store's threads; keep it
        /// cheap. Default: ignored.
        package var healthEvents: @Sendable (StoreHealthEvent) -> Void = { _ in }

        package init(connectionString: String) { self.connectionString = connectionString }
    }

    private let pool: ConnectionPool
    /// One more connection thread, for lease renewals only (`writeLease`).
    private let leasePool: ConnectionPool
    private let threadsDone: CountdownLatch
    package let clock: @Sendable () -> Date
    private let logger: Logger
    private let healthEvents: @Sendable (StoreHealthEvent) -> Void
    /// PostgreSQL's spelling of `publish_jobs` (the state as such, targets as a `text[]`).
    package static var publishSchema: PublishSchema { .postgresql }
    /// For the LISTEN connection and exports, which are not the pool's.
    let connectionString: String
    /// Running LISTEN connections (`listen(_:)`), stopped by `close()`.
    private let listeners = Locked<[PGListener]>([])
    /// The hold on `Configuration.nodeID`, dropped by `close()`.
    private let nodeLock = Locked<PGNodeLock?>(nil)

    private init(
        pool: ConnectionPool, leasePool: ConnectionPool, threadsDone: CountdownLatch,
        configuration: Configuration
    ) {
        self.pool = pool
        self.leasePool = leasePool
        self.threadsDone = threadsDone
        self.clock = configuration.clock
        self.logger = configuration.logger
        self.healthEvents = configuration.healthEvents
        self.connectionString = configuration.connectionString
    }

    /// Connects, upgrades the schema and starts the connection threads.
    /// - Throws: `PushStoreError.unsupportedSchemaVersion` for a database migrated by a newer program;
    ///   `StoreUnavailableError` (`unreachable`) when the server cannot be reached; `PostgreSQLError` otherwise.
    package static func open(_ configuration: Configuration) async throws -> PostgreSQLPushStore {
        try await open(configuration, migrator: PostgreSQLMigrator())
    }

    /// What the server does with a pool session whose node stops talking (`poolConnection`).
    package static let poolSessionSettings = """
        SET idle_in_transaction_session_timeout = '10s'; SET tcp_keepalives_idle = \(PGConnection.Keepalive.idle);
        SET tcp_keepalives_interval = \(PGConnection.Keepalive.interval);
        SET tcp_keepalives_count = \(PGConnection.Keepalive.count)
        """

    /// A connection of the pools, with `poolSessionSettings`. A node cut off inside one of its write transactions
    /// (a checkpoint: the fence's lock on the job row, the device rows) left that transaction open on the server,
    /// and its row locks held, for as long as the server kept the connection: two hours of the kernel's keepalive by
    /// default, or for ever behind a proxy that keeps the connection up. The other nodes' claims skip a locked job
    /// and their checkpoints wait on the device rows, so its publish stopped everywhere
    /// (`Tests/sdk/test_postgresql_partition.py`). Now the server ends such a transaction after 10 s of silence
    /// inside it (the pool's transactions never pause between statements; less than the 30 s lease, so the job is
    /// free when its lease ends) and notices a vanished client in about 25 s. Not for the export's snapshot, which
    /// stays open while a slow client reads (`PostgreSQLPushStore+Transfer`).
    static func poolConnection(_ connectionString: String) throws -> PGConnection {
        let connection = try PGConnection(connectionString: connectionString)
        do {
            try connection.execute(poolSessionSettings)
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    static func open(_ configuration: Configuration, migrator: PostgreSQLMigrator) async throws -> PostgreSQLPushStore {
        let size = max(1, configuration.poolSize)
        let threadsDone = CountdownLatch(count: size + 1)
        let connectionString = configuration.connectionString
        let pool = ConnectionPool(
            size: size, name: "store-pg", maxAttempts: configuration.maxAttempts,
            maxBatch: max(1, configuration.maxBatchSize),
            connect: { try poolConnection(connectionString) },
            finished: { threadsDone.arrive(nil) })
        let leasePool = ConnectionPool(
            size: 1, name: "store-pg-lease", maxAttempts: configuration.maxAttempts, maxBatch: 1,
            connect: { try poolConnection(connectionString) },
            finished: { threadsDone.arrive(nil) })
        let store = PostgreSQLPushStore(
            pool: pool, leasePool: leasePool, threadsDone: threadsDone,
            configuration: configuration)
        let logger = configuration.logger.named("store")
        do {
            let found = try await store.perform(write: false) { session in try migrator.migrate(session, logger: logger)
            }
            logger.info(
                "Store opened",
                [
                    "backend": "postgresql", "pool": String(size), "schema": String(migrator.newestVersion),
                    "schema_found": String(found),
                ])
            if let nodeID = configuration.nodeID {
                let now = configuration.clock()
                let held = try await PGNodeLock.take(
                    connectionString: connectionString, nodeID: nodeID, wait: configuration.nodeIDWait, logger: logger,
                    onHeld: { try expireLeases(of: nodeID, $0, now: now, logger: logger) })
                store.nodeLock.withLock { $0 = held }
            }
        } catch {
            pool.shutdown()
            leasePool.shutdown()
            _ = await threadsDone.wait()
            throw error
        }
        return store
    }

    /// Under the node's identity lock, the leases the identity holds belong to a process that is gone: its jobs
    /// and shards become claimable now (a claim raises a shard's epoch, fencing anything that process wrote).
    private static func expireLeases(of nodeID: String, _ connection: PGConnection, now: Date, logger: Logger) throws {
        let parameters: [PGValue] = [.text(nodeID), .millis(now)]
        let jobs = try connection.run(
            "UPDATE publish_jobs SET lease_expires_at = $2 WHERE state = 'running' AND lease_owner = $1 AND lease_expires_at > $2",
            parameters)
        let shards = try connection.run(
            "UPDATE publish_shards SET lease_expires_at = $2 WHERE state = 'running' AND lease_owner = $1 AND lease_expires_at > $2",
            parameters)
        if jobs + shards > 0 {
            logger.notice(
                "Resuming publishes this node's previous process left running",
                [
                    "node": nodeID, "publishes": String(jobs), "shards": String(shards),
                ])
        }
    }

    deinit {
        // A backstop for a store dropped without `close()`: let the threads drain and close their connections.
        for listener in listeners.withLock({ $0 }) { listener.stop() }
        nodeLock.withLock { $0 }?.stop()
        pool.shutdown()
        leasePool.shutdown()
    }

    /// Lets queued work finish, then closes every connection. Idempotent.
    package func close() async throws {
        for listener in listeners.withLock({ $0 }) { await listener.stopAndWait() }
        pool.shutdown()
        leasePool.shutdown()
        _ = await threadsDone.wait()
        // Last: the identity is held until nothing of this process can write any more.
        await nodeLock.withLock { $0 }?.stopAndWait()
    }

    /// Commits a transaction that changes no data, to learn whether the database can write again after it could
    /// not. - Throws: `StoreUnavailableError` while it cannot.
    package func probeWrite() async throws {
        // A write transaction with a transaction id: fails on a read-only standby, a full disk or no server.
        try await perform(write: true) { session in
            try session.transaction { connection in _ = try connection.query("SELECT txid_current()") }
        }
    }

    // MARK: Running work on the store's threads

    /// Runs `body` in a read-write transaction on a connection thread, possibly shared with other queued writes
    /// (group commit, each write in a savepoint of its own); returns after COMMIT.
    /// - Parameters:
    ///   - retryable: errors besides serialization failures and deadlocks after which `body` runs again (a foreign
    ///     key whose parent a concurrent transaction deleted).
    ///   - tenant: the instance the write is for; instances share the pool's threads fairly (`FairBatches`).
    ///     `nil`: the publish engine and housekeeping, one tenant of their own.
    ///   - cost: about how many rows `body` writes (at least 1), charged to the tenant's share.
    /// - Throws: what `body` threw, `StoreUnavailableError` when the database cannot be reached or written,
    ///   `PostgreSQLError`.
    func write<T: Sendable>(
        retryable: @escaping @Sendable (PostgreSQLError) -> Bool = { _ in false }, tenant: String? = nil, cost: Int = 1,
        _ body: @escaping @Sendable (PGConnection) throws -> T
    ) async throws -> T {
        let healthEvents = self.healthEvents
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let write = PGGroupedWrite(
                run: { connection in
                    let value = try body(connection)
                    return {
                        healthEvents(.wrote)
                        continuation.resume(returning: value)
                    }
                },
                fail: { error in
                    if let unavailable = StoreUnavailableError(postgreSQL: error) {
                        healthEvents(.failed(unavailable))
                        continuation.resume(throwing: unavailable)
                    } else {
                        continuation.resume(throwing: error)
                    }
                },
                retryable: retryable)
            if !pool.submit(.write(write), tenant: tenant ?? "", cost: max(1, cost)) {
                continuation.resume(throwing: PushStoreError.closed)
            }
        }
    }

    /// Runs `body` in a read-write transaction of its own on a connection thread (never in a group), with the
    /// retries of `PGSession.transaction`; returns after COMMIT. For writes that lock many rows of a shared table
    /// (a checkpoint's devices): each such transaction takes its locks in one order, which a group of several
    /// writes would not keep.
    func writeAlone<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await perform(write: true) { session in try session.transaction(body) }
    }

    /// Runs `body` in a read-write transaction on the lease connection: lease renewals only, so a renewal never
    /// waits in the pool's queue behind checkpoints and group commits, nor in their transactions' lock waits.
    func writeLease<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await perform(on: leasePool, write: true) { session in try session.transaction(body) }
    }

    /// No error but serialization failures and deadlocks runs a write again.
    private static let noRace: @Sendable (PostgreSQLError) -> Bool = { _ in false }

    /// Runs a write of a role written once (`SQLStoreBackend`): grouped for its tenant and cost (run again after
    /// `interestRace` when it races interests), alone (`writeAlone`), or on the lease connection (`writeLease`).
    package func write<T: Sendable>(
        _ write: StoreWrite, _ body: @escaping @Sendable (PGConnection) throws -> T
    ) async throws -> T {
        switch write.queue {
        case .grouped:
            let retryable: @Sendable (PostgreSQLError) -> Bool = write.racesInterests ? Self.interestRace : Self.noRace
            return try await self.write(retryable: retryable, tenant: write.tenant, cost: write.cost, body)
        case .alone: return try await writeAlone(body)
        case .lease: return try await writeLease(body)
        }
    }

    /// Runs `body` in one read-only `REPEATABLE READ` transaction on a connection thread: its statements see one
    /// snapshot (see `PGSession.transaction`).
    package func read<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await perform(write: false) { session in try session.transaction(readOnly: true, body) }
    }

    /// Runs `body` with a connection thread's session, alone (not in a group transaction).
    private func perform<T: Sendable>(
        on pool: ConnectionPool? = nil, write: Bool, _ body: @escaping @Sendable (PGSession) throws -> T
    ) async throws -> T {
        let pool = pool ?? self.pool
        let healthEvents = self.healthEvents
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let operation = PGOperation.session { session in
                do {
                    let value = try body(session)
                    if write { healthEvents(.wrote) }
                    continuation.resume(returning: value)
                } catch {
                    if let unavailable = StoreUnavailableError(postgreSQL: error) {
                        healthEvents(.failed(unavailable))
                        continuation.resume(throwing: unavailable)
                    } else {
                        continuation.resume(throwing: error)
                    }
                }
            }
            if !pool.submit(operation) { continuation.resume(throwing: PushStoreError.closed) }
        }
    }
}

extension PostgreSQLPushStore {
    /// This backend splits large publishes into shards (`PostgreSQLPushStore+Shards.swift`).
    package var sharding: (any ShardedPublishQueue)? { self }
    /// This backend announces queue changes over LISTEN/NOTIFY (below).
    package var queueNotices: (any QueueNotifying)? { self }
}

extension PostgreSQLPushStore: QueueNotifying {
    /// LISTENs on `noticeChannel` over one more connection (the pool's are busy with transactions): a publish
    /// queued or split on any node announces `.work`, a cancel `.cancelled`. `.work` also once the LISTEN is in
    /// place, at first and after the connection was down (the database restarted, say).
    package func listen(_ onNotice: @escaping @Sendable (QueueNotice) -> Void) -> Bool {
        let listener = PGListener(
            connectionString: connectionString, channel: Self.noticeChannel, logger: logger.named("store"),
            connected: "work"
        ) { payload in
            if payload.hasPrefix("cancel:") {
                guard let id = Int64(payload.dropFirst("cancel:".count)) else { return }
                onNotice(.cancelled(PublishJobID(rawValue: id)))
            } else {
                onNotice(.work)
            }
        }
        listeners.withLock { $0.append(listener) }
        return true
    }
}

extension PostgreSQLPushStore: InstanceChangeNotifying {
    /// LISTENs on `instancesChannel` over a connection of its own; `onChange` also runs each time the LISTEN is in
    /// place (at first, and after the connection was down: announcements made meanwhile were missed).
    package func listenForInstanceChanges(_ onChange: @escaping @Sendable () -> Void) -> Bool {
        let listener = PGListener(
            connectionString: connectionString, channel: Self.instancesChannel, logger: logger.named("store"),
            connected: "connected"
        ) { _ in onChange() }
        listeners.withLock { $0.append(listener) }
        return true
    }
}
