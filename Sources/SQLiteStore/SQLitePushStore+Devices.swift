import Foundation
import PushStore
import SQL

extension SQLitePushStore {
    /// The columns `readDevice` expects, in order.
    static let deviceColumns = """
        id, public_id, instance_id, platform, token, environment, environment_declared, bundle_id, metadata, \
        user_id, created_at, last_registered_at, last_status, last_reason, last_result_at, invalidated_at, time_zone
        """

    /// Maps a row selected with `deviceColumns` to its internal key and the device.
    static func readDevice(_ row: Statement) -> (ref: Int64, device: Device) {
        let lastResult = row.optionalInt64(12).map { status in
            DeliveryResult(status: Int(status), reason: row.optionalText(13), at: row.date(14))
        }
        let device = Device(
            id: row.text(1), instanceID: row.text(2), platform: Platform(rawValue: row.text(3)) ?? .apns,
            token: row.text(4), environment: PushEnvironment(rawValue: row.text(5)) ?? .production,
            environmentDeclared: row.int64(6) != 0, bundleID: row.optionalText(7), metadata: row.text(8),
            userID: row.optionalText(9), createdAt: row.date(10), lastRegisteredAt: row.date(11),
            lastResult: lastResult, invalidatedAt: row.optionalDate(15), timeZone: row.optionalText(16))
        return (row.int64(0), device)
    }

    /// The internal key of a device, or `nil`.
    static func deviceRef(_ connection: SQLiteConnection, instanceID: String, id: String) throws -> Int64? {
        try connection.first(
            "SELECT id FROM devices WHERE public_id = ? AND instance_id = ?", [.text(id), .text(instanceID)]
        ) { $0.int64(0) }
    }

    /// The device's interest names, sorted.
    static func interestNames(_ connection: SQLiteConnection, deviceRef: Int64) throws -> [String] {
        var names: [String] = []
        try connection.query(
            """
            SELECT i.name FROM device_interests di JOIN interests i ON i.id = di.interest_id
            WHERE di.device_id = ? ORDER BY i.name
            """, [.integer(deviceRef)]
        ) { names.append($0.text(0)) }
        return names
    }

    /// The id of an interest, created on first use.
    static func interestID(_ connection: SQLiteConnection, instanceID: String, name: String) throws -> Int64 {
        let key: [SQLValue] = [.text(instanceID), .text(name)]
        if let id = try connection.first("SELECT id FROM interests WHERE instance_id = ? AND name = ?", key, { $0.int64(0) }) {
            return id
        }
        try connection.run("INSERT INTO interests (instance_id, name) VALUES (?, ?)", key)
        return connection.lastInsertRowID
    }

    static func register(
        _ registration: DeviceRegistration, now: Date, maxDevicesPerInstance: Int = .max, connection: SQLiteConnection
    ) throws -> RegisteredDevice {
        if maxDevicesPerInstance < .max {
            // The count is kept by triggers (Schema.deviceCountsAndInterestCleanup); only a full instance pays for
            // the token lookup that tells a re-registration from a new device.
            let count = try connection.first(
                "SELECT devices FROM instance_device_counts WHERE instance_id = ?", [.text(registration.instanceID)]
            ) { $0.int64(0) } ?? 0
            if count >= Int64(maxDevicesPerInstance) {
                let known = try connection.first(
                    "SELECT 1 FROM devices WHERE instance_id = ? AND platform = ? AND token = ?",
                    [.text(registration.instanceID), .text(registration.platform.rawValue), .text(registration.token)]
                ) { _ in true } ?? false
                if !known { throw PushStoreError.deviceLimitReached }
            }
        }
        let newID = Device.makeID(platform: registration.platform, at: now)
        let row = try connection.first(
            """
            INSERT INTO devices (public_id, instance_id, platform, token, environment, environment_declared,
                                 bundle_id, metadata, created_at, last_registered_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (instance_id, platform, token) DO UPDATE SET
                last_registered_at = excluded.last_registered_at,
                bundle_id = COALESCE(excluded.bundle_id, bundle_id),
                metadata = excluded.metadata,
                environment = CASE WHEN excluded.environment_declared THEN excluded.environment ELSE environment END,
                environment_declared = environment_declared OR excluded.environment_declared,
                invalidated_at = NULL
            RETURNING \(deviceColumns)
            """,
            [
                .text(newID), .text(registration.instanceID), .text(registration.platform.rawValue),
                .text(registration.token), .text(registration.environment.rawValue),
                .bool(registration.environmentDeclared), .text(registration.bundleID), .text(registration.metadata),
                .millis(now), .millis(now),
            ], readDevice)
        guard let (ref, device) = row else { preconditionFailure("INSERT … RETURNING returned no row") }
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
            try connection.first(
                "SELECT \(Self.deviceColumns) FROM devices WHERE public_id = ? AND instance_id = ?",
                [.text(id), .text(instanceID)]) { Self.readDevice($0).device }
        }
    }

    public func deviceRef(instanceID: String, id: String) async throws -> Int64? {
        try await read { connection in
            try connection.first(
                "SELECT \(Self.deviceColumns) FROM devices WHERE public_id = ? AND instance_id = ?",
                [.text(id), .text(instanceID)]) { Self.readDevice($0).ref }
        }
    }

    public func device(instanceID: String, platform: Platform, token: String) async throws -> Device? {
        try await read { connection in
            try connection.first(
                "SELECT \(Self.deviceColumns) FROM devices WHERE instance_id = ? AND platform = ? AND token = ?",
                [.text(instanceID), .text(platform.rawValue), .text(token)]) { Self.readDevice($0).device }
        }
    }

    public func deleteDevice(instanceID: String, id: String) async throws -> Bool {
        // device_interests rows go with it (ON DELETE CASCADE); the user binding is a column of the row.
        try await write(tenant: instanceID) { connection in
            try Self.deleteDevices(
                "DELETE FROM devices WHERE public_id = ? AND instance_id = ?", [.text(id), .text(instanceID)],
                reason: DeviceInvalidation.deviceDeleted, connection: connection) > 0
        }
    }

    public func updateTimeZone(instanceID: String, deviceID: String, timeZone: String?) async throws -> Bool {
        try await write(tenant: instanceID) { connection in
            try connection.run(
                "UPDATE devices SET time_zone = ? WHERE public_id = ? AND instance_id = ?",
                [.text(timeZone), .text(deviceID), .text(instanceID)]) > 0
        }
    }

    public func updateMetadata(instanceID: String, deviceID: String, metadata: String) async throws -> Bool {
        try await write(tenant: instanceID) { connection in
            try connection.run(
                "UPDATE devices SET metadata = ? WHERE public_id = ? AND instance_id = ?",
                [.text(metadata), .text(deviceID), .text(instanceID)]) > 0
        }
    }

    public func updateToken(instanceID: String, deviceID: String, platform: Platform, token: String) async throws -> Bool {
        let now = clock()
        return try await write(tenant: instanceID) { connection in
            guard let device = try connection.first(
                "SELECT id, user_id FROM devices WHERE public_id = ? AND instance_id = ? AND platform = ?",
                [.text(deviceID), .text(instanceID), .text(platform.rawValue)], { ($0.int64(0), $0.optionalText(1)) })
            else { return false }
            let (ref, userID) = device
            // A live holder bound to another user keeps its token (PushStorage.updateToken).
            let owner = try connection.first(
                """
                SELECT user_id FROM devices WHERE instance_id = ? AND platform = ? AND token = ? AND id <> ?
                AND invalidated_at IS NULL AND user_id IS NOT NULL
                """, [.text(instanceID), .text(platform.rawValue), .text(token), .integer(ref)], { $0.text(0) })
            if let owner, owner != userID { throw PushStoreError.tokenHeldByAnotherUser }
            // The other holder goes first: (instance, platform, token) is unique. Its interests go with it
            // (ON DELETE CASCADE) and the device count follows (trigger).
            try connection.run(
                "DELETE FROM devices WHERE instance_id = ? AND platform = ? AND token = ? AND id <> ?",
                [.text(instanceID), .text(platform.rawValue), .text(token), .integer(ref)])
            try connection.run(
                "UPDATE devices SET token = ?, last_registered_at = ?, invalidated_at = NULL WHERE id = ?",
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
            var names: [String] = []
            // Interest names are never empty, so "" sorts before every one of them.
            try connection.query(
                """
                SELECT i.name FROM device_interests di JOIN interests i ON i.id = di.interest_id
                WHERE di.device_id = ? AND i.name > ? ORDER BY i.name LIMIT ?
                """, [.integer(ref), .text(cursor ?? ""), .integer(Int64(limit) + 1)]
            ) { names.append($0.text(0)) }
            let more = names.count > limit
            if more { names.removeLast() }
            return InterestPage(interests: names, nextCursor: more ? names.last : nil)
        }
    }

    /// The instance's (subscriptions, distinct interest names), from the trigger-kept count row.
    static func interestCounts(_ connection: SQLiteConnection, instanceID: String) throws
        -> (subscriptions: Int64, interests: Int64)
    {
        try connection.first(
            "SELECT subscriptions, interests FROM instance_interest_counts WHERE instance_id = ?", [.text(instanceID)]
        ) { ($0.int64(0), $0.int64(1)) } ?? (0, 0)
    }

    /// Runs `change` and then checks the instance's counts against `limits`; a violation throws, which rolls the
    /// operation's savepoint back (the single writer makes the two reads exact).
    static func limited<T>(_ connection: SQLiteConnection, instanceID: String, _ limits: InterestLimits,
                           _ change: () throws -> T) throws -> T {
        guard limits != .unlimited else { return try change() }
        let before = try interestCounts(connection, instanceID: instanceID)
        let result = try change()
        let after = try interestCounts(connection, instanceID: instanceID)
        if let violation = limits.violation(before: before, after: after) { throw violation }
        return result
    }

    /// Interest changes (a name added or removed) one writer operation makes at most when a device's set changes by
    /// more. Each is a random page of the name index: 5,000 of them held the single writer 200–400 ms, and every
    /// other instance's writes with it (issue 25); 32 take about a millisecond (one writer slice,
    /// `WriterThread.sliceCost`), and the writer's fair share lets other instances' writes commit between the steps.
    static let interestStep = 32

    public func setInterests(instanceID: String, deviceID: String, interests: [String], limits: InterestLimits)
        async throws -> Bool
    {
        let wanted = Set(interests)
        return try await interestTurns.withTurn(instanceID + "/" + deviceID) {
            // The first step reads the device's set and makes the whole change when it is small (or when the
            // instance is near a cap, where only one transaction can promise "nothing changes" on refusal); else
            // its first `interestStep` changes, and hands back the rest.
            let first = try await write(tenant: instanceID, cost: min(wanted.count, Self.interestStep) + 1) {
                connection -> InterestChange? in
                guard let ref = try Self.deviceRef(connection, instanceID: instanceID, id: deviceID) else { return nil }
                var current: [String: Int64] = [:]
                try connection.query(
                    """
                    SELECT i.name, i.id FROM device_interests di JOIN interests i ON i.id = di.interest_id
                    WHERE di.device_id = ?
                    """, [.integer(ref)]
                ) { current[$0.text(0)] = $0.int64(1) }
                // Only the difference is written: an unchanged interest keeps its row (and its interests entry,
                // which a delete-all would drop as unfollowed and re-create).
                var change = InterestChange(
                    ref: ref, removals: current.keys.filter { !wanted.contains($0) },
                    additions: wanted.filter { current[$0] == nil })
                // The cap check reads the counts, so only a change that would otherwise go in steps pays for it.
                let atOnce = try change.count <= Self.interestStep
                    || !Self.fitsInSteps(connection, instanceID: instanceID, additions: change.additions.count, limits)
                try Self.limited(connection, instanceID: instanceID, limits) {
                    try change.apply(connection, instanceID: instanceID, upTo: atOnce ? .max : Self.interestStep)
                }
                return change
            }
            guard var change = first else { return false }
            while !change.isFinished {
                let progress: InterestChange.Progress?
                do {
                    progress = try await write(tenant: instanceID, cost: Self.interestStep) { [change] connection in
                        // The device may have been deleted (or its token moved) between steps.
                        guard try Self.deviceRef(connection, instanceID: instanceID, id: deviceID) == change.ref else {
                            return nil
                        }
                        var next = change
                        try Self.limited(connection, instanceID: instanceID, limits) {
                            try next.apply(connection, instanceID: instanceID, upTo: Self.interestStep)
                        }
                        return next.done
                    }
                } catch let error as PushStoreError {
                    // Another device took the instance to a cap meanwhile: undo the steps made (the refused one
                    // rolled back by itself), so a refused write changes nothing, as `setInterests` promises.
                    try await undoInterestSteps(change.undone, instanceID: instanceID, deviceID: deviceID)
                    throw error
                }
                guard let progress else { return false }
                change.done = progress
            }
            return true
        }
    }

    /// Whether `additions` more names and subscriptions stay within `limits` however many of the names are new: then
    /// the steps cannot be refused midway (except by another device's writes in between, which `undoInterestSteps`
    /// handles).
    private static func fitsInSteps(_ connection: SQLiteConnection, instanceID: String, additions: Int,
                                    _ limits: InterestLimits) throws -> Bool {
        guard limits != .unlimited else { return true }
        let counts = try interestCounts(connection, instanceID: instanceID)
        return counts.subscriptions + Int64(additions) <= Int64(clamping: limits.maxSubscriptionsPerInstance)
            && counts.interests + Int64(additions) <= Int64(clamping: limits.maxInterestsPerInstance)
    }

    /// Makes `undo` (a refused stepwise write's inverse) in steps too.
    private func undoInterestSteps(_ undo: InterestChange, instanceID: String, deviceID: String) async throws {
        var undo = undo
        while !undo.isFinished {
            let progress = try await write(tenant: instanceID, cost: Self.interestStep) { [undo] connection -> InterestChange.Progress? in
                guard try Self.deviceRef(connection, instanceID: instanceID, id: deviceID) == undo.ref else { return nil }
                var next = undo
                try next.apply(connection, instanceID: instanceID, upTo: Self.interestStep)
                return next.done
            }
            guard let progress else { return }
            undo.done = progress
        }
    }

    public func addInterest(instanceID: String, deviceID: String, interest: String, limits: InterestLimits)
        async throws -> Bool
    {
        try await interestTurns.withTurn(instanceID + "/" + deviceID) {
            try await write(tenant: instanceID) { connection in
                guard let ref = try Self.deviceRef(connection, instanceID: instanceID, id: deviceID) else { return false }
                return try Self.limited(connection, instanceID: instanceID, limits) {
                    let interestID = try Self.interestID(connection, instanceID: instanceID, name: interest)
                    try connection.run(
                        "INSERT OR IGNORE INTO device_interests (interest_id, device_id) VALUES (?, ?)",
                        [.integer(interestID), .integer(ref)])
                    return true
                }
            }
        }
    }

    public func removeInterest(instanceID: String, deviceID: String, interest: String) async throws -> Bool {
        try await interestTurns.withTurn(instanceID + "/" + deviceID) {
            try await write(tenant: instanceID) { connection in
                guard let ref = try Self.deviceRef(connection, instanceID: instanceID, id: deviceID) else { return false }
                try Self.removeInterest(connection, instanceID: instanceID, deviceRef: ref, name: interest)
                return true
            }
        }
    }

    /// Unfollows `name` (a no-op when the device does not follow it).
    static func removeInterest(_ connection: SQLiteConnection, instanceID: String, deviceRef: Int64, name: String) throws {
        try connection.run(
            """
            DELETE FROM device_interests
            WHERE device_id = ? AND interest_id = (SELECT id FROM interests WHERE instance_id = ? AND name = ?)
            """, [.integer(deviceRef), .text(instanceID), .text(name)])
    }

    /// Follows `name` (a no-op when the device follows it already).
    static func addInterest(_ connection: SQLiteConnection, instanceID: String, deviceRef: Int64, name: String) throws {
        let interest = try interestID(connection, instanceID: instanceID, name: name)
        try connection.run(
            "INSERT OR IGNORE INTO device_interests (interest_id, device_id) VALUES (?, ?)",
            [.integer(interest), .integer(deviceRef)])
    }

    public func subscriberCount(instanceID: String, interest: String) async throws -> Int {
        try await read { connection in
            Int(
                try connection.first(
                    """
                    SELECT count(*) FROM device_interests di JOIN devices d ON d.id = di.device_id
                    WHERE di.interest_id = (SELECT id FROM interests WHERE instance_id = ? AND name = ?)
                      AND d.invalidated_at IS NULL
                    """, [.text(instanceID), .text(interest)]) { $0.int64(0) } ?? 0)
        }
    }

    // MARK: Users

    public func setUser(
        instanceID: String, deviceID: String, userID: String, maxDevicesPerUser: Int
    ) async throws -> SetUserResult {
        try await write(tenant: instanceID) { connection in
            guard
                let (ref, current) = try connection.first(
                    "SELECT id, user_id FROM devices WHERE public_id = ? AND instance_id = ?",
                    [.text(deviceID), .text(instanceID)], { ($0.int64(0), $0.optionalText(1)) })
            else { return .deviceNotFound }
            if current == userID { return .ok }
            if current != nil { return .differentUserAlreadySet }
            let count = try connection.first(
                "SELECT count(*) FROM devices WHERE instance_id = ? AND user_id = ? AND invalidated_at IS NULL",
                [.text(instanceID), .text(userID)]) { $0.int64(0) } ?? 0
            if count >= maxDevicesPerUser { return .userHasTooManyDevices }
            try connection.run("UPDATE devices SET user_id = ? WHERE id = ?", [.text(userID), .integer(ref)])
            return .ok
        }
    }

    public func deleteUser(instanceID: String, userID: String, audit: AuditEntry?) async throws -> Int {
        try await write(tenant: instanceID) { connection in
            let removed = try Self.deleteDevices(
                "DELETE FROM devices WHERE instance_id = ? AND user_id = ?", [.text(instanceID), .text(userID)],
                reason: DeviceInvalidation.userDeleted, connection: connection)
            try Self.append(audit, connection)
            return removed
        }
    }

    /// Runs `delete` (a DELETE of devices) and logs each deleted device as a removal, in the caller's
    /// transaction. - Returns: how many were deleted.
    static func deleteDevices(_ delete: String, _ bindings: [SQLValue], reason: String,
                              connection: SQLiteConnection) throws -> Int {
        var removed: [DeviceInvalidation] = []
        let now = Date(millisecondsSince1970: Date().millisecondsSince1970)
        try connection.query(delete + " RETURNING instance_id, public_id, platform, token, user_id", bindings) { row in
            removed.append(.removal(of: (row.text(0), row.text(1), row.text(2), row.text(3), row.optionalText(4)),
                                    reason: reason, at: now))
        }
        for record in removed { try logInvalidation(record, connection: connection) }
        return removed.count
    }

    public func devices(instanceID: String, userID: String) async throws -> [Device] {
        try await read { connection in
            var devices: [Device] = []
            try connection.query(
                "SELECT \(Self.deviceColumns) FROM devices WHERE instance_id = ? AND user_id = ? ORDER BY id",
                [.text(instanceID), .text(userID)]) { devices.append(Self.readDevice($0).device) }
            return devices
        }
    }
}
