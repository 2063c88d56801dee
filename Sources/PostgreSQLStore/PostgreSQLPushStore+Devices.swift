import Foundation
import PushStore
import SQL
import StoreSQL

extension PostgreSQLPushStore {
    /// The ids of the instance's interests `names`, created when missing (two statements for any number).
    static func interestIDs(_ connection: PGConnection, instanceID: String, names: [String]) throws -> [Int64] {
        guard !names.isEmpty else { return [] }
        try connection.run(
            """
            INSERT INTO interests (instance_id, name) SELECT $1, name FROM unnest($2::text[]) AS n(name)
            ON CONFLICT (instance_id, name) DO NOTHING
            """, [.text(instanceID), .textArray(names)])
        let result = try connection.query(
            "SELECT id FROM interests WHERE instance_id = $1 AND name = ANY($2::text[])",
            [.text(instanceID), .textArray(names)])
        return result.map { result.int64($0, 0) }
    }

    /// An interest that lost its last follower is deleted by a trigger; a concurrent transaction adding a follower
    /// to it then fails its foreign key (23503) and simply runs again (creating the interest anew). The other way
    /// round, the trigger's delete fails the same foreign key when a follower was added meanwhile (its snapshot did
    /// not see it): that unfollow runs again too, and then leaves the interest, which is followed.
    static let interestRace: @Sendable (PostgreSQLError) -> Bool = { $0.isForeignKeyViolation }

    /// Registers a device (`DeviceSQL.register`) after the device cap: new devices of one instance take turns on
    /// its count row (the insert trigger updates it anyway), so concurrent registrations on any number of nodes never
    /// pass the cap. After other writes of its group transaction (`PGConnection.followsOtherWrites`) it waits for no
    /// row: a known token's row is locked `NOWAIT` here, as the count row is (`lockedCounts`), and a busy one sends
    /// the registration to run alone. Two groups re-registering the same tokens in other orders, or one that holds a
    /// token's row and wants the count row another holds while wanting that token, deadlocked (`MultiNodeTests`).
    package static func register(
        _ registration: DeviceRegistration, now: Date, maxDevicesPerInstance: Int = .max, connection: PGConnection
    ) throws -> RegisteredDevice {
        if maxDevicesPerInstance < .max {
            let lock: SQLLock? = connection.followsOtherWrites ? .forUpdateNoWait : nil
            let known =
                try connection.fetchOne(
                    """
                    SELECT 1 FROM devices WHERE instance_id = \(registration.instanceID) \
                    AND platform = \(registration.platform.rawValue) AND token = \(registration.token) \(lock: lock)
                    """
                ) { _ in true } ?? false
            if !known {
                let count = try lockedCounts(connection, instanceID: registration.instanceID).devices
                if count >= Int64(maxDevicesPerInstance) { throw PushStoreError.deviceLimitReached }
            }
        }
        return try DeviceSQL.register(registration, now: now, on: connection)
    }

    // MARK: Interests

    /// The instance's count row (devices, subscriptions, distinct interest names), locked for the rest of the
    /// transaction (created if missing), so that capped writers of one instance take turns on every node: new devices
    /// for the device cap, interest changes for the interest caps (the count triggers would wait on that row anyway).
    ///
    /// Capped writers take the count row before the device rows they write. A group transaction whose earlier writes
    /// already hold device rows (a known token's re-registration locks its row and never the count row) would take
    /// it after them, and deadlock with a transaction that holds the count row and waits for one of those devices
    /// (two nodes re-registering the same tokens, `MultiNodeTests`; docs/BENCHMARKS.md, "On PostgreSQL, one node or
    /// two"). There the lock is asked for `NOWAIT`: when it is busy, the write is rolled back to its savepoint and
    /// runs alone afterwards, where it waits holding nothing (`PGSession.group`).
    static func lockedCounts(_ connection: PGConnection, instanceID: String) throws
        -> (devices: Int64, subscriptions: Int64, interests: Int64)
    {
        try connection.perform(
            """
            INSERT INTO instance_device_counts (instance_id, devices) VALUES (\(instanceID), 0) ON CONFLICT DO NOTHING
            """)
        let lock: SQLLock = connection.followsOtherWrites ? .forUpdateNoWait : .forUpdate
        return try connection.fetchOne(
            """
            SELECT devices, subscriptions, interests FROM instance_device_counts WHERE instance_id = \(instanceID) \
            \(lock: lock)
            """
        ) { row in (try row.decode(0), try row.decode(1), try row.decode(2)) } ?? (0, 0, 0)
    }

    /// At once: one transaction with array statements writes any interest set, and the count row's lock orders
    /// capped writers.
    package func withInterestTurn<T: Sendable>(
        instanceID: String, deviceID: String, _ body: () async throws -> T
    ) async throws -> T {
        try await body()
    }

    /// The instance's (subscriptions, distinct interest names) from its locked count row (`lockedCounts`).
    package static func interestCounts(_ connection: PGConnection, instanceID: String) throws
        -> (subscriptions: Int64, interests: Int64)
    {
        let counts = try lockedCounts(connection, instanceID: instanceID)
        return (counts.subscriptions, counts.interests)
    }

    package func setInterests(instanceID: String, deviceID: String, interests: [String], limits: InterestLimits)
        async throws -> Bool
    {
        try await write(retryable: Self.interestRace, tenant: instanceID, cost: interests.count + 1) { connection in
            guard let ref = try DeviceSQL.ref(instanceID: instanceID, id: deviceID, on: connection) else {
                return false
            }
            return try Self.limited(connection, instanceID: instanceID, limits) {
                // Only the difference is written: an unchanged interest keeps its row (and its interests entry, which
                // a delete-all would drop as unfollowed and re-create).
                let current = try InterestSQL.current(deviceRef: ref, on: connection)
                let wanted = Set(interests)
                let dropped = current.filter { !wanted.contains($0.key) }.map(\.value)
                if !dropped.isEmpty {
                    try connection.run(
                        "DELETE FROM device_interests WHERE device_id = $1 AND interest_id = ANY($2::bigint[])",
                        [.integer(ref), .integerArray(dropped)])
                }
                let added = wanted.filter { current[$0] == nil }.sorted()
                let ids = try Self.interestIDs(connection, instanceID: instanceID, names: added)
                if !ids.isEmpty {
                    try connection.run(
                        """
                        INSERT INTO device_interests (interest_id, device_id) SELECT id, $1 FROM unnest($2::bigint[]) AS i(id)
                        ON CONFLICT DO NOTHING
                        """, [.integer(ref), .integerArray(ids)])
                }
                return true
            }
        }
    }

    // MARK: Users

    /// Bindings to one user take turns (a transaction-scoped lock on the user's name), so two nodes binding devices
    /// at once cannot both pass the per-user limit.
    package static func lockUserBindings(instanceID: String, userID: String, connection: PGConnection) throws {
        try connection.query(
            "SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))", [.text(instanceID), .text(userID)])
    }

}
