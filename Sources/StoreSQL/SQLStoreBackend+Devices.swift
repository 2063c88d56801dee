import Foundation
import PushStore

/// The device and user roles written once: `DeviceSQL`'s and `InterestSQL`'s statements in the backend's
/// transactions. A device's cap check, the interest caps' check, the invalidation log's insert and the user bindings'
/// lock are the backend's (`SQLStoreBackend`); setting a device's whole interest set stays per backend (SQLite writes
/// a large change in steps under its one writer, PostgreSQL in one transaction with array statements).
extension SQLStoreBackend {
    // MARK: Devices

    package func registerDevice(
        _ registration: DeviceRegistration, maxDevicesPerInstance: Int
    ) async throws -> RegisteredDevice {
        let now = clock()
        return try await write(StoreWrite(tenant: registration.instanceID)) {
            try Self.register(registration, now: now, maxDevicesPerInstance: maxDevicesPerInstance, connection: $0)
        }
    }

    package func registerDevices(_ registrations: [DeviceRegistration]) async throws -> [RegisteredDevice] {
        let now = clock()
        let write = StoreWrite(tenant: registrations.first?.instanceID, cost: registrations.count)
        return try await self.write(write) { connection in
            try registrations.map {
                try Self.register($0, now: now, maxDevicesPerInstance: .max, connection: connection)
            }
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
        try await write(StoreWrite(tenant: instanceID, racesInterests: true)) { connection in
            let removed = try DeviceSQL.delete(
                .device(id: id), instanceID: instanceID, reason: DeviceInvalidation.deviceDeleted, on: connection)
            try Self.logInvalidations(removed, connection: connection)
            return !removed.isEmpty
        }
    }

    package func updateTimeZone(instanceID: String, deviceID: String, timeZone: String?) async throws -> Bool {
        try await write(StoreWrite(tenant: instanceID)) { connection in
            try DeviceSQL.setTimeZone(timeZone, instanceID: instanceID, deviceID: deviceID, on: connection)
        }
    }

    package func updateMetadata(instanceID: String, deviceID: String, metadata: String) async throws -> Bool {
        try await write(StoreWrite(tenant: instanceID)) { connection in
            try DeviceSQL.setMetadata(metadata, instanceID: instanceID, deviceID: deviceID, on: connection)
        }
    }

    package func updateToken(instanceID: String, deviceID: String, platform: Platform, token: String) async throws
        -> Bool
    {
        let now = clock()
        return try await write(StoreWrite(tenant: instanceID, racesInterests: true)) { connection in
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

    /// Runs `change` between two reads of the instance's counts (`interestCounts`) and refuses it (throws, rolling
    /// the write's savepoint back) when it breaks `limits`.
    package static func limited<T>(
        _ connection: Connection, instanceID: String, _ limits: InterestLimits, _ change: () throws -> T
    ) throws -> T {
        guard limits != .unlimited else { return try change() }
        let before = try interestCounts(connection, instanceID: instanceID)
        let result = try change()
        let after = try interestCounts(connection, instanceID: instanceID)
        if let violation = limits.violation(before: before, after: after) { throw violation }
        return result
    }

    package func addInterest(instanceID: String, deviceID: String, interest: String, limits: InterestLimits)
        async throws -> Bool
    {
        try await withInterestTurn(instanceID: instanceID, deviceID: deviceID) {
            try await write(StoreWrite(tenant: instanceID, racesInterests: true)) { connection in
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
        try await withInterestTurn(instanceID: instanceID, deviceID: deviceID) {
            try await write(StoreWrite(tenant: instanceID, racesInterests: true)) { connection in
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
        try await write(StoreWrite(tenant: instanceID)) { connection in
            try Self.lockUserBindings(instanceID: instanceID, userID: userID, connection: connection)
            return try DeviceSQL.setUser(
                instanceID: instanceID, deviceID: deviceID, userID: userID,
                maxDevicesPerUser: maxDevicesPerUser, on: connection)
        }
    }

    package func deleteUser(instanceID: String, userID: String, audit: AuditEntry?) async throws -> Int {
        try await write(StoreWrite(tenant: instanceID, racesInterests: true)) { connection in
            let removed = try DeviceSQL.delete(
                .user(userID), instanceID: instanceID, reason: DeviceInvalidation.userDeleted, on: connection)
            try Self.logInvalidations(removed, connection: connection)
            try AuditLogSQL.append(audit, on: connection)
            return removed.count
        }
    }

    package func devices(instanceID: String, userID: String) async throws -> [Device] {
        try await read { connection in try DeviceSQL.devices(instanceID: instanceID, userID: userID, on: connection) }
    }
}
