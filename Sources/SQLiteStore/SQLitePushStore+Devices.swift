import Foundation
import PushStore
import SQL
import StoreSQL

extension SQLitePushStore {
    /// Registers a device (`DeviceSQL.register`) after the device cap: the count is kept by triggers
    /// (Schema.deviceCountsAndInterestCleanup), and the single writer makes the read exact; only a full instance pays
    /// for the token lookup that tells a re-registration from a new device.
    package static func register(
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

    // MARK: Interests

    /// The instance's (subscriptions, distinct interest names), from the trigger-kept count row.
    package static func interestCounts(_ connection: SQLiteConnection, instanceID: String) throws
        -> (subscriptions: Int64, interests: Int64)
    {
        try connection.fetchOne(
            """
            SELECT subscriptions, interests FROM instance_interest_counts WHERE instance_id = \(instanceID)
            """
        ) { (try $0.decode(0, as: Int64.self), try $0.decode(1, as: Int64.self)) } ?? (0, 0)
    }

    /// In the device's turn (`interestTurns`), so no other write of its interests interleaves with a stepwise one.
    package func withInterestTurn<T: Sendable>(
        instanceID: String, deviceID: String, _ body: () async throws -> T
    ) async throws -> T {
        try await interestTurns.withTurn(instanceID + "/" + deviceID, body)
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

    // MARK: Users

    /// Nothing: the one writer already serialises every binding.
    package static func lockUserBindings(instanceID: String, userID: String, connection: SQLiteConnection) throws {}

}
