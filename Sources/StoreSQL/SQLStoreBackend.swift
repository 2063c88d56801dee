import Foundation
import PushStore
import SQL

/// What one write of a role written once asks of the backend that runs it. Each backend keeps its own way of running
/// writes (SQLite's one writer thread with group commit, PostgreSQL's pool of connection threads, each grouping the
/// writes it takes); these are the choices a role makes about a write, which each backend maps onto its own.
package struct StoreWrite: Sendable {
    /// How the write is queued.
    package enum Queue: Sendable {
        /// With the other writes (group commit).
        case grouped
        /// In a transaction of its own where a backend groups several callers' writes in one (PostgreSQL): a write
        /// that locks many rows of a shared table, whose lock order a group would not keep, or a rare one that need
        /// not wait behind a group. SQLite's single writer runs it in its group all the same.
        case alone
        /// A lease renewal: ahead of the queued writes (SQLite's urgent write), or on a connection of its own
        /// (PostgreSQL's lease connection), so that it never waits behind a backlog until the lease ran out.
        case lease
    }

    /// How the write is queued. Default `.grouped`.
    package var queue: Queue = .grouped
    /// The instance the write is for: instances share the backend's writers fairly (`FairBatches`). `nil`: the
    /// publish engine and housekeeping, one tenant of their own. Default nil.
    package var tenant: String?
    /// About how many rows the write changes (at least 1), charged to the tenant's share. Default 1.
    package var cost = 1
    /// The write deletes devices or moves tokens, and so can meet a concurrent follow of an interest that a trigger
    /// deletes when it loses its last follower: on PostgreSQL that fails a foreign key and the write runs again
    /// (`PostgreSQLPushStore.interestRace`); SQLite's one writer never interleaves the two. Default false.
    package var racesInterests = false

    /// A write queued as `queue`, for `tenant`, of about `cost` rows.
    package init(_ queue: Queue = .grouped, tenant: String? = nil, cost: Int = 1, racesInterests: Bool = false) {
        self.queue = queue
        self.tenant = tenant
        self.cost = cost
        self.racesInterests = racesInterests
    }
}

/// A store backend on which the roles whose logic is the same on SQLite and PostgreSQL are written once (the
/// `SQLStoreBackend+…` extensions): it supplies how it runs a read and a write on its connections, and the few
/// statements or locks that really differ (the device cap check, the interest counts, the invalidation log's insert,
/// the user bindings' lock, the interest turn, the queue's announcement, a finished job's shards, the events'
/// delete, the target pages, how a publish's targets are matched); each role method then wraps a shared statement
/// of this target once for both. What differs in more than a statement (claims, shards, checkpoints and delivery
/// results, interest sets in steps, the group-commit writers' threads and policies around `SQL`'s one loop,
/// `GroupCommit`) stays in each backend. `package` access is enough: it crosses targets inside the package, so the
/// backends' connection types need not be public.
package protocol SQLStoreBackend: Sendable {
    /// The backend's connection, on which the shared statements run.
    associatedtype Connection: SQLConnection

    /// How the shared publish-queue statements read and write this backend's `publish_jobs`.
    static var publishSchema: PublishSchema { get }

    /// The time source for `created_at`/`last_registered_at`.
    var clock: @Sendable () -> Date { get }

    /// Runs `body` in one read-only transaction (one consistent snapshot) on one of the backend's connections.
    func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T

    /// Runs `body` in a read-write transaction as `write` asks; returns after COMMIT. If `body` throws, only its own
    /// changes are rolled back.
    func write<T: Sendable>(_ write: StoreWrite, _ body: @escaping @Sendable (Connection) throws -> T) async throws
        -> T

    /// Registers a device after the per-instance device cap (`.max`: none), in the caller's transaction: how the cap
    /// is made exact differs (SQLite's single writer reads the count; PostgreSQL's writers lock the count row).
    static func register(
        _ registration: DeviceRegistration, now: Date, maxDevicesPerInstance: Int, connection: Connection
    ) throws -> RegisteredDevice

    /// Appends `records` to the invalidation log, in the caller's transaction.
    static func logInvalidations(_ records: [DeviceInvalidation], connection: Connection) throws

    /// The instance's (subscriptions, distinct interest names) for a check of the interest caps (`limited`), exact
    /// for the rest of the caller's transaction: SQLite's single writer reads the trigger-kept counts; PostgreSQL
    /// locks the instance's count row, so that capped writers on every node take turns.
    static func interestCounts(_ connection: Connection, instanceID: String) throws
        -> (subscriptions: Int64, interests: Int64)

    /// Runs `body`, a write of one device's interests, in that device's turn where the backend has turns (SQLite,
    /// whose large interest sets are written in steps that another write must not interleave with).
    func withInterestTurn<T: Sendable>(
        instanceID: String, deviceID: String, _ body: () async throws -> T
    ) async throws -> T

    /// Makes bindings of devices to `userID` take turns for the rest of the caller's transaction, so that two
    /// writers cannot both pass the per-user device limit (nothing on SQLite, whose one writer serialises them).
    static func lockUserBindings(instanceID: String, userID: String, connection: Connection) throws

    /// Tells the other nodes about `notice` when the caller's transaction commits (PostgreSQL's NOTIFY; nothing on
    /// SQLite, which has no other node).
    static func announce(_ notice: QueueNotice, connection: Connection) throws

    /// Ends what a finished job leaves besides its row, in the caller's transaction (PostgreSQL rolls a split job's
    /// shard counters up into its own and deletes the shards; nothing on SQLite, which has no shards).
    static func finished(_ job: PublishJobID, connection: Connection) throws

    /// A statement deleting up to `limit` events recorded before `before` (the retention purge's first step):
    /// row-value `IN` on SQLite, `ctid` with `SKIP LOCKED` on PostgreSQL.
    static func deleteEvents(before: Date, limit: Int) -> SQLQuery

    /// One page of an interests publish's valid targets after `cursor`, at most `limit` (at least 1) of them.
    static func interestTargets(
        _ connection: Connection, instanceID: String, interests: [String], after cursor: Int64, limit: Int
    ) throws -> TargetPage

    /// One page of a users publish's valid targets after `cursor`, at most `limit` (at least 1) of them.
    static func userTargets(
        _ connection: Connection, instanceID: String, users: [String], after cursor: Int64, limit: Int
    ) throws -> TargetPage

    /// A condition on a `publish_jobs` row: whether the publish targeted the device `ref` (nil: no such device) of
    /// user `userID` in `instanceID`, by its users or by one of its interests (`DeliveryResultSQL.reportFacts`).
    static func publishTargets(userID: String?, ref: Int64?, instanceID: String) -> SQLQuery
}
