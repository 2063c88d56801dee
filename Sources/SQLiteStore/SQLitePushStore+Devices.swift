import Foundation
import PushStore
import SQL
import StoreSQL

extension SQLitePushStore {
    /// Registers a device (`DeviceSQL.register`) after the device cap: the count is kept by triggers
    /// (Schema.deviceCountsAndInterestCleanup), and the single writer makes the read exact; only a full instance pays
    /// for the token lookup that tells a re-registration from a new device.
    static func register(
        _ registration: DeviceRegistration, now: Date, maxDevicesPerInstance: Int = .max, connection: SQLiteConnection
    ) throws -> RegisteredDevice {
        if maxDevicesPerInstance < .max {
            let count =
                try connection.fetchOne(
                    """
                    SELECT devices FROM instance_device_counts WHERE instance_id = \(registration.instanceID)
                    """
                ) { try $0.decode(0, as: Int64.self) } ?? 0
            if count >= Int64(maxDevicesPerInstance) {
                let known =
                    try connection.fetchOne(
                        """
                        SELECT 1 FROM devices WHERE instance_id = \(registration.instanceID) \
                        AND platform = \(registration.platform.rawValue) AND token = \(registration.token)
                        """
                    ) { _ in true } ?? false
                if !known { throw PushStoreError.deviceLimitReached }
            }
        }
        return try DeviceSQL.register(registration, now: now, on: connection)
    }

    // MARK: Devices

    package func registerDevice(
        _ registration: DeviceRegistration, maxDevicesPerInstance: Int
    ) async throws -> RegisteredDevice {
        let now = clock()
        return try await write(tenant: registration.instanceID) {
            try Self.register(registration, now: now, maxDevicesPerInstance: maxDevicesPerInstance, connection: $0)
        }
    }

    package func registerDevices(_ registrations: [DeviceRegistration]) async throws -> [RegisteredDevice] {
        let now = clock()
        return try await write(tenant: registrations.first?.instanceID, cost: registrations.count) { connection in
            try registrations.map { try Self.register($0, now: now, connection: connection) }
        }
    }

    package func device(instanceID: String, id: String) async throws -> Device? {
        try await read { connection in try DeviceSQL.find(instanceID: instanceID, id: id, on: connection)?.device }
    }

    package func deviceRef(instanceID: String, id: String) async throws -> Int64? {
        try await read { connection in try DeviceSQL.ref(instanceID: instanceID, id: id, on: connection) }
    }

    package func device(instanceID: String, platform: Platform, token: String) async throws -> Device? {
        try await read { connection in
            try DeviceSQL.find(instanceID: instanceID, platform: platform, token: token, on: connection)
        }
    }

    package func deleteDevice(instanceID: String, id: String) async throws -> Bool {
        try await write(tenant: instanceID) { connection in
            let removed = try DeviceSQL.delete(
                .device(id: id), instanceID: instanceID, reason: DeviceInvalidation.deviceDeleted, on: connection)
            for record in removed { try Self.logInvalidation(record, connection: connection) }
            return !removed.isEmpty
        }
    }

    package func updateTimeZone(instanceID: String, deviceID: String, timeZone: String?) async throws -> Bool {
        try await write(tenant: instanceID) { connection in
            try DeviceSQL.setTimeZone(timeZone, instanceID: instanceID, deviceID: deviceID, on: connection)
        }
    }

    package func updateMetadata(instanceID: String, deviceID: String, metadata: String) async throws -> Bool {
        try await write(tenant: instanceID) { connection in
            try DeviceSQL.setMetadata(metadata, instanceID: instanceID, deviceID: deviceID, on: connection)
        }
    }

    package func updateToken(instanceID: String, deviceID: String, platform: Platform, token: String) async throws
        -> Bool
    {
        let now = clock()
        return try await write(tenant: instanceID) { connection in
            try DeviceSQL.updateToken(
                instanceID: instanceID, deviceID: deviceID, platform: platform, token: token, now: now, on: connection)
        }
    }

    // MARK: Interests

    package func interests(instanceID: String, deviceID: String, limit: Int, cursor: String?) async throws
        -> InterestPage?
    {
        try await read { connection in
            try InterestSQL.page(
                instanceID: instanceID, deviceID: deviceID, limit: limit, cursor: cursor, on: connection)
        }
    }

    /// The instance's (subscriptions, distinct interest names), from the trigger-kept count row.
    static func interestCounts(_ connection: SQLiteConnection, instanceID: String) throws
        -> (subscriptions: Int64, interests: Int64)
    {
        try connection.fetchOne(
            """
            SELECT subscriptions, interests FROM instance_interest_counts WHERE instance_id = \(instanceID)
            """
        ) { (try $0.decode(0, as: Int64.self), try $0.decode(1, as: Int64.self)) } ?? (0, 0)
    }

    /// Runs `change` and then checks the instance's counts against `limits`; a violation throws, which rolls the
    /// operation's savepoint back (the single writer makes the two reads exact).
    static func limited<T>(
        _ connection: SQLiteConnection, instanceID: String, _ limits: InterestLimits,
        _ change: () throws -> T
    ) throws -> T {
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

    package func setInterests(instanceID: String, deviceID: String, interests: [String], limits: InterestLimits)
        async throws -> Bool
    {
        let wanted = Set(interests)
        return try await interestTurns.withTurn(instanceID + "/" + deviceID) {
            // The first step reads the device's set and makes the whole change when it is small (or when the
            // instance is near a cap, where only one transaction can promise "nothing changes" on refusal); else
            // its first `interestStep` changes, and hands back the rest.
            let first = try await write(tenant: instanceID, cost: min(wanted.count, Self.interestStep) + 1) {
                connection -> InterestChange? in
                guard let ref = try DeviceSQL.ref(instanceID: instanceID, id: deviceID, on: connection) else {
                    return nil
                }
                let current = try InterestSQL.current(deviceRef: ref, on: connection)
                // Only the difference is written: an unchanged interest keeps its row (and its interests entry,
                // which a delete-all would drop as unfollowed and re-create).
                var change = InterestChange(
                    ref: ref, removals: current.keys.filter { !wanted.contains($0) },
                    additions: wanted.filter { current[$0] == nil })
                // The cap check reads the counts, so only a change that would otherwise go in steps pays for it.
                let atOnce =
                    try change.count <= Self.interestStep
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
                    progress = try await write(tenant: instanceID, cost: Self.interestStep, continuing: true) {
                        [change] connection in
                        // The device may have been deleted (or its token moved) between steps.
                        guard try DeviceSQL.ref(instanceID: instanceID, id: deviceID, on: connection) == change.ref
                        else {
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
    private static func fitsInSteps(
        _ connection: SQLiteConnection, instanceID: String, additions: Int,
        _ limits: InterestLimits
    ) throws -> Bool {
        guard limits != .unlimited else { return true }
        let counts = try interestCounts(connection, instanceID: instanceID)
        return counts.subscriptions + Int64(additions) <= Int64(clamping: limits.maxSubscriptionsPerInstance)
            && counts.interests + Int64(additions) <= Int64(clamping: limits.maxInterestsPerInstance)
    }

    /// Makes `undo` (a refused stepwise write's inverse) in steps too.
    private func undoInterestSteps(_ undo: InterestChange, instanceID: String, deviceID: String) async throws {
        var undo = undo
        while !undo.isFinished {
            let progress = try await write(tenant: instanceID, cost: Self.interestStep, continuing: true) {
                [undo] connection -> InterestChange.Progress? in
                guard try DeviceSQL.ref(instanceID: instanceID, id: deviceID, on: connection) == undo.ref else {
                    return nil
                }
                var next = undo
                try next.apply(connection, instanceID: instanceID, upTo: Self.interestStep)
                return next.done
            }
            guard let progress else { return }
            undo.done = progress
        }
    }

    package func addInterest(instanceID: String, deviceID: String, interest: String, limits: InterestLimits)
        async throws -> Bool
    {
        try await interestTurns.withTurn(instanceID + "/" + deviceID) {
            try await write(tenant: instanceID) { connection in
                guard let ref = try DeviceSQL.ref(instanceID: instanceID, id: deviceID, on: connection) else {
                    return false
                }
                return try Self.limited(connection, instanceID: instanceID, limits) {
                    try InterestSQL.follow(interest, instanceID: instanceID, deviceRef: ref, on: connection)
                    return true
                }
            }
        }
    }

    package func removeInterest(instanceID: String, deviceID: String, interest: String) async throws -> Bool {
        try await interestTurns.withTurn(instanceID + "/" + deviceID) {
            try await write(tenant: instanceID) { connection in
                guard let ref = try DeviceSQL.ref(instanceID: instanceID, id: deviceID, on: connection) else {
                    return false
                }
                try InterestSQL.unfollow(interest, instanceID: instanceID, deviceRef: ref, on: connection)
                return true
            }
        }
    }

    package func subscriberCount(instanceID: String, interest: String) async throws -> Int {
        try await read { connection in
            try InterestSQL.subscriberCount(instanceID: instanceID, interest: interest, on: connection)
        }
    }

    // MARK: Users

    package func setUser(
        instanceID: String, deviceID: String, userID: String, maxDevicesPerUser: Int
    ) async throws -> SetUserResult {
        try await write(tenant: instanceID) { connection in
            try DeviceSQL.setUser(
                instanceID: instanceID, deviceID: deviceID, userID: userID,
                maxDevicesPerUser: maxDevicesPerUser, on: connection)
        }
    }

    package func deleteUser(instanceID: String, userID: String, audit: AuditEntry?) async throws -> Int {
        try await write(tenant: instanceID) { connection in
            let removed = try DeviceSQL.delete(
                .user(userID), instanceID: instanceID, reason: DeviceInvalidation.userDeleted, on: connection)
            for record in removed { try Self.logInvalidation(record, connection: connection) }
            try Self.append(audit, connection)
            return removed.count
        }
    }

    package func devices(instanceID: String, userID: String) async throws -> [Device] {
        try await read { connection in try DeviceSQL.devices(instanceID: instanceID, userID: userID, on: connection) }
    }
}
