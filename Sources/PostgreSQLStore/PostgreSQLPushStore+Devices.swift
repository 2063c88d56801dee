import Foundation
import PushStore

extension PostgreSQLPushStore {
    /// The columns `readDevice` expects, in order.
    static let deviceColumns = """
        id, public_id, instance_id, platform, token, environment, environment_declared, bundle_id, metadata, \
        user_id, created_at, last_registered_at, last_status, last_reason, last_result_at, invalidated_at, time_zone
        """

    /// Maps a row selected with `deviceColumns` to its internal key and the device.
    static func readDevice(_ result: PGResult, _ row: Int) -> (ref: Int64, device: Device) {
        let lastResult = result.optionalInt64(row, 12).map { status in
            DeliveryResult(status: Int(clamping: status), reason: result.optionalText(row, 13), at: result.date(row, 14))
        }
        let device = Device(
            id: result.text(row, 1), instanceID: result.text(row, 2),
            platform: Platform(rawValue: result.text(row, 3)) ?? .apns, token: result.text(row, 4),
            environment: PushEnvironment(rawValue: result.text(row, 5)) ?? .production,
            environmentDeclared: result.bool(row, 6), bundleID: result.optionalText(row, 7),
            metadata: result.text(row, 8), userID: result.optionalText(row, 9), createdAt: result.date(row, 10),
            lastRegisteredAt: result.date(row, 11), lastResult: lastResult, invalidatedAt: result.optionalDate(row, 15),
            timeZone: result.optionalText(row, 16))
        return (result.int64(row, 0), device)
    }

    /// The internal key of a device, or `nil`.
    static func deviceRef(_ connection: PGConnection, instanceID: String, id: String) throws -> Int64? {
        let result = try connection.query(
            "SELECT id FROM devices WHERE public_id = $1 AND instance_id = $2", [.text(id), .text(instanceID)])
        return result.first { result.int64($0, 0) }
    }

    /// The device's interest names, sorted.
    static func interestNames(_ connection: PGConnection, deviceRef: Int64) throws -> [String] {
        let result = try connection.query(
            """
            SELECT i.name FROM device_interests di JOIN interests i ON i.id = di.interest_id
            WHERE di.device_id = $1 ORDER BY i.name COLLATE "C"
            """, [.integer(deviceRef)])
        return result.map { result.text($0, 0) }
    }

    /// The ids of the instance's interests `names`, created when missing.
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

    static func register(
        _ registration: DeviceRegistration, now: Date, maxDevicesPerInstance: Int = .max, connection: PGConnection
    ) throws -> RegisteredDevice {
        let key: [PGValue] = [.text(registration.instanceID), .text(registration.platform.rawValue), .text(registration.token)]
        if maxDevicesPerInstance < .max {
            let known = try connection.query(
                "SELECT 1 FROM devices WHERE instance_id = $1 AND platform = $2 AND token = $3", key).rowCount > 0
            if !known {
                // New devices of one instance take turns on its count row (the insert trigger updates it anyway),
                // so concurrent registrations on any number of nodes never pass the cap.
                try connection.run(
                    "INSERT INTO instance_device_counts (instance_id, devices) VALUES ($1, 0) ON CONFLICT DO NOTHING",
                    [.text(registration.instanceID)])
                let count = try connection.query(
                    "SELECT devices FROM instance_device_counts WHERE instance_id = $1 FOR UPDATE",
                    [.text(registration.instanceID)])
                if (count.first { count.int64($0, 0) } ?? 0) >= Int64(maxDevicesPerInstance) {
                    throw PushStoreError.deviceLimitReached
                }
            }
        }
        let newID = Device.makeID(platform: registration.platform, at: now)
        // Two nodes registering the same new token at once: one inserts, the other waits on the unique index and
        // then updates the row the first one inserted, so both answer with the same device.
        let result = try connection.query(
            """
            INSERT INTO devices (public_id, instance_id, platform, token, environment, environment_declared,
                                 bundle_id, metadata, created_at, last_registered_at)
            VALUES ($1, $2, $3, $4, $5, $6::boolean, $7, $8, $9::bigint, $9::bigint)
            ON CONFLICT (instance_id, platform, token) DO UPDATE SET
                last_registered_at = excluded.last_registered_at,
                bundle_id = COALESCE(excluded.bundle_id, devices.bundle_id),
                metadata = excluded.metadata,
                environment = CASE WHEN excluded.environment_declared THEN excluded.environment
                                   ELSE devices.environment END,
                environment_declared = devices.environment_declared OR excluded.environment_declared,
                invalidated_at = NULL
            RETURNING \(deviceColumns)
            """,
            [
                .text(newID), .text(registration.instanceID), .text(registration.platform.rawValue),
                .text(registration.token), .text(registration.environment.rawValue),
                .bool(registration.environmentDeclared), .text(registration.bundleID), .text(registration.metadata),
                .millis(now),
            ])
        guard let (ref, device) = result.first({ readDevice(result, $0) }) else {
            throw PostgreSQLError(sqlstate: nil, message: "INSERT … RETURNING returned no row")
        }
        let created = device.id == newID
        let interests = created ? [] : try interestNames(connection, deviceRef: ref)
        return RegisteredDevice(device: device, created: created, interests: interests)
    }

    // MARK: Devices

    public func registerDevice(
        _ registration: DeviceRegistration, maxDevicesPerInstance: Int
    ) async throws -> RegisteredDevice {
        let now = clock()
        return try await write(tenant: registration.instanceID) {
            try Self.register(registration, now: now, maxDevicesPerInstance: maxDevicesPerInstance, connection: $0)
        }
    }

    public func registerDevices(_ registrations: [DeviceRegistration]) async throws -> [RegisteredDevice] {
        let now = clock()
        return try await write(tenant: registrations.first?.instanceID, cost: registrations.count) { connection in
            try registrations.map { try Self.register($0, now: now, connection: connection) }
        }
    }

    public func device(instanceID: String, id: String) async throws -> Device? {
        try await read { connection in
            let result = try connection.query(
                "SELECT \(Self.deviceColumns) FROM devices WHERE public_id = $1 AND instance_id = $2",
                [.text(id), .text(instanceID)])
            return result.first { Self.readDevice(result, $0).device }
        }
    }

    public func deviceRef(instanceID: String, id: String) async throws -> Int64? {
        try await read { connection in
            let result = try connection.query(
                "SELECT \(Self.deviceColumns) FROM devices WHERE public_id = $1 AND instance_id = $2",
                [.text(id), .text(instanceID)])
            return result.first { Self.readDevice(result, $0).ref }
        }
    }

    public func device(instanceID: String, platform: Platform, token: String) async throws -> Device? {
        try await read { connection in
            let result = try connection.query(
                "SELECT \(Self.deviceColumns) FROM devices WHERE instance_id = $1 AND platform = $2 AND token = $3",
                [.text(instanceID), .text(platform.rawValue), .text(token)])
            return result.first { Self.readDevice(result, $0).device }
        }
    }

    public func deleteDevice(instanceID: String, id: String) async throws -> Bool {
        // device_interests rows go with it (ON DELETE CASCADE); the user binding is a column of the row.
        try await write(retryable: Self.interestRace, tenant: instanceID) { connection in
            try Self.deleteDevices(
                "DELETE FROM devices WHERE public_id = $1 AND instance_id = $2", [.text(id), .text(instanceID)],
                reason: DeviceInvalidation.deviceDeleted, connection: connection) > 0
        }
    }

    public func updateTimeZone(instanceID: String, deviceID: String, timeZone: String?) async throws -> Bool {
        try await write(tenant: instanceID) { connection in
            try connection.run(
                "UPDATE devices SET time_zone = $1 WHERE public_id = $2 AND instance_id = $3",
                [.text(timeZone), .text(deviceID), .text(instanceID)]) > 0
        }
    }

    public func updateMetadata(instanceID: String, deviceID: String, metadata: String) async throws -> Bool {
        try await write(tenant: instanceID) { connection in
            try connection.run(
                "UPDATE devices SET metadata = $1 WHERE public_id = $2 AND instance_id = $3",
                [.text(metadata), .text(deviceID), .text(instanceID)]) > 0
        }
    }

    public func updateToken(instanceID: String, deviceID: String, platform: Platform, token: String) async throws -> Bool {
        let now = clock()
        return try await write(retryable: Self.interestRace, tenant: instanceID) { connection in
            let found = try connection.query(
                "SELECT id, user_id FROM devices WHERE public_id = $1 AND instance_id = $2 AND platform = $3 FOR UPDATE",
                [.text(deviceID), .text(instanceID), .text(platform.rawValue)])
            guard let ref = found.first({ found.int64($0, 0) }) else { return false }
            let userID = found.first({ found.optionalText($0, 1) }) ?? nil
            // A live holder bound to another user keeps its token (PushStorage.updateToken). Locked, so that it
            // cannot be bound between this check and the delete below.
            let holder = try connection.query(
                """
                SELECT user_id, invalidated_at IS NULL FROM devices
                WHERE instance_id = $1 AND platform = $2 AND token = $3 AND id <> $4 FOR UPDATE
                """, [.text(instanceID), .text(platform.rawValue), .text(token), .integer(ref)])
            if let other = holder.first({ (owner: holder.optionalText($0, 0), live: holder.bool($0, 1)) }),
               other.live, let owner = other.owner, owner != userID {
                throw PushStoreError.tokenHeldByAnotherUser
            }
            // The other holder goes first: (instance, platform, token) is unique. Its interests go with it
            // (ON DELETE CASCADE) and the device count follows (trigger).
            try connection.run(
                "DELETE FROM devices WHERE instance_id = $1 AND platform = $2 AND token = $3 AND id <> $4",
                [.text(instanceID), .text(platform.rawValue), .text(token), .integer(ref)])
            try connection.run(
                "UPDATE devices SET token = $1, last_registered_at = $2, invalidated_at = NULL WHERE id = $3",
                [.text(token), .millis(now), .integer(ref)])
            return true
        }
    }

    // MARK: Interests

    public func interests(instanceID: String, deviceID: String, limit: Int, cursor: String?) async throws -> InterestPage? {
        // One row more than the page is read to learn whether another page follows: `limit + 1` must not overflow.
        let limit = min(max(1, limit), Int.max - 1)
        return try await read { connection in
            guard let ref = try Self.deviceRef(connection, instanceID: instanceID, id: deviceID) else { return nil }
            // Byte order (COLLATE "C"), as SQLite sorts: the cursor must mean the same on every backend and
            // database locale. Interest names are never empty, so "" sorts before every one of them.
            let result = try connection.query(
                """
                SELECT i.name FROM device_interests di JOIN interests i ON i.id = di.interest_id
                WHERE di.device_id = $1 AND i.name COLLATE "C" > $2 ORDER BY i.name COLLATE "C" LIMIT $3
                """, [.integer(ref), .text(cursor ?? ""), .integer(Int64(limit) + 1)])
            var names = result.map { result.text($0, 0) }
            let more = names.count > limit
            if more { names.removeLast() }
            return InterestPage(interests: names, nextCursor: more ? names.last : nil)
        }
    }

    /// The instance's (subscriptions, distinct interest names), its count row (the one the device cap uses)
    /// locked for the rest of the transaction (created if missing), so that capped writers of one instance take
    /// turns on every node, as new devices do for the device cap (the count triggers would wait on that row anyway).
    static func lockedInterestCounts(_ connection: PGConnection, instanceID: String) throws
        -> (subscriptions: Int64, interests: Int64)
    {
        try connection.run(
            "INSERT INTO instance_device_counts (instance_id, devices) VALUES ($1, 0) ON CONFLICT DO NOTHING",
            [.text(instanceID)])
        let result = try connection.query(
            "SELECT subscriptions, interests FROM instance_device_counts WHERE instance_id = $1 FOR UPDATE",
            [.text(instanceID)])
        return result.first { (result.int64($0, 0), result.int64($0, 1)) } ?? (0, 0)
    }

    /// Runs `change` between two reads of the instance's locked count row and refuses (throws, rolling the write's
    /// savepoint back) a change that breaks `limits`.
    static func limited<T>(_ connection: PGConnection, instanceID: String, _ limits: InterestLimits,
                           _ change: () throws -> T) throws -> T {
        guard limits != .unlimited else { return try change() }
        let before = try lockedInterestCounts(connection, instanceID: instanceID)
        let result = try change()
        let after = try lockedInterestCounts(connection, instanceID: instanceID)
        if let violation = limits.violation(before: before, after: after) { throw violation }
        return result
    }

    public func setInterests(instanceID: String, deviceID: String, interests: [String], limits: InterestLimits)
        async throws -> Bool
    {
        try await write(retryable: Self.interestRace, tenant: instanceID, cost: interests.count + 1) { connection in
            guard let ref = try Self.deviceRef(connection, instanceID: instanceID, id: deviceID) else { return false }
            return try Self.limited(connection, instanceID: instanceID, limits) {
                // Only the difference is written: an unchanged interest keeps its row (and its interests entry, which
                // a delete-all would drop as unfollowed and re-create).
                let currentRows = try connection.query(
                    """
                    SELECT i.name, i.id FROM device_interests di JOIN interests i ON i.id = di.interest_id
                    WHERE di.device_id = $1
                    """, [.integer(ref)])
                var current: [String: Int64] = [:]
                for row in 0..<currentRows.rowCount { current[currentRows.text(row, 0)] = currentRows.int64(row, 1) }
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

    public func addInterest(instanceID: String, deviceID: String, interest: String, limits: InterestLimits)
        async throws -> Bool
    {
        try await write(retryable: Self.interestRace, tenant: instanceID) { connection in
            guard let ref = try Self.deviceRef(connection, instanceID: instanceID, id: deviceID) else { return false }
            return try Self.limited(connection, instanceID: instanceID, limits) {
                let ids = try Self.interestIDs(connection, instanceID: instanceID, names: [interest])
                try connection.run(
                    "INSERT INTO device_interests (interest_id, device_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    [.integer(ids.first), .integer(ref)])
                return true
            }
        }
    }

    public func removeInterest(instanceID: String, deviceID: String, interest: String) async throws -> Bool {
        try await write(retryable: Self.interestRace, tenant: instanceID) { connection in
            guard let ref = try Self.deviceRef(connection, instanceID: instanceID, id: deviceID) else { return false }
            try connection.run(
                """
                DELETE FROM device_interests
                WHERE device_id = $1 AND interest_id = (SELECT id FROM interests WHERE instance_id = $2 AND name = $3)
                """, [.integer(ref), .text(instanceID), .text(interest)])
            return true
        }
    }

    public func subscriberCount(instanceID: String, interest: String) async throws -> Int {
        try await read { connection in
            let result = try connection.query(
                """
                SELECT count(*) FROM device_interests di JOIN devices d ON d.id = di.device_id
                WHERE di.interest_id = (SELECT id FROM interests WHERE instance_id = $1 AND name = $2)
                  AND d.invalidated_at IS NULL
                """, [.text(instanceID), .text(interest)])
            return Int(result.int64(0, 0))
        }
    }

    // MARK: Users

    public func setUser(
        instanceID: String, deviceID: String, userID: String, maxDevicesPerUser: Int
    ) async throws -> SetUserResult {
        try await write(tenant: instanceID) { connection in
            // Bindings to one user take turns (a transaction-scoped lock on the user's name), so two nodes binding
            // devices at once cannot both pass the per-user limit.
            try connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))", [.text(instanceID), .text(userID)])
            let found = try connection.query(
                "SELECT id, user_id FROM devices WHERE public_id = $1 AND instance_id = $2 FOR UPDATE",
                [.text(deviceID), .text(instanceID)])
            guard let (ref, current) = found.first({ (found.int64($0, 0), found.optionalText($0, 1)) }) else {
                return .deviceNotFound
            }
            if current == userID { return .ok }
            if current != nil { return .differentUserAlreadySet }
            let count = try connection.query(
                "SELECT count(*) FROM devices WHERE instance_id = $1 AND user_id = $2 AND invalidated_at IS NULL",
                [.text(instanceID), .text(userID)])
            if count.int64(0, 0) >= Int64(maxDevicesPerUser) { return .userHasTooManyDevices }
            try connection.run("UPDATE devices SET user_id = $1 WHERE id = $2", [.text(userID), .integer(ref)])
            return .ok
        }
    }

    public func deleteUser(instanceID: String, userID: String, audit: AuditEntry?) async throws -> Int {
        try await write(retryable: Self.interestRace, tenant: instanceID) { connection in
            let removed = try Self.deleteDevices(
                "DELETE FROM devices WHERE instance_id = $1 AND user_id = $2", [.text(instanceID), .text(userID)],
                reason: DeviceInvalidation.userDeleted, connection: connection)
            try Self.append(audit, connection)
            return removed
        }
    }

    /// Runs `delete` (a DELETE of devices) and logs each deleted device as a removal, in the caller's
    /// transaction. - Returns: how many were deleted.
    static func deleteDevices(_ delete: String, _ parameters: [PGValue], reason: String,
                              connection: PGConnection) throws -> Int {
        let now = Date(millisecondsSince1970: Date().millisecondsSince1970)
        let result = try connection.query(delete + " RETURNING instance_id, public_id, platform, token, user_id", parameters)
        let removed = (0..<result.rowCount).map { row in
            DeviceInvalidation.removal(
                of: (result.text(row, 0), result.text(row, 1), result.text(row, 2), result.text(row, 3),
                     result.optionalText(row, 4)), reason: reason, at: now)
        }
        try logInvalidations(removed, connection: connection)
        return removed.count
    }

    public func devices(instanceID: String, userID: String) async throws -> [Device] {
        try await read { connection in
            let result = try connection.query(
                "SELECT \(Self.deviceColumns) FROM devices WHERE instance_id = $1 AND user_id = $2 ORDER BY id",
                [.text(instanceID), .text(userID)])
            return result.map { Self.readDevice(result, $0).device }
        }
    }
}
