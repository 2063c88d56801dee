import Foundation
import PushStore
import SQL

/// The device registry's statements, the same on SQLite and PostgreSQL; each runs inside the caller's transaction.
/// What differs stays per backend: the device cap (SQLite's one writer reads the trigger-kept count, PostgreSQL
/// locks the instance's count row so that nodes take turns), the per-user turn (`pg_advisory_xact_lock`), and the
/// invalidation log's insert (row by row, or one array insert).
package enum DeviceSQL {
    /// The columns `device(_:)` reads, in order.
    package static let columns = """
        id, public_id, instance_id, platform, token, environment, environment_declared, bundle_id, metadata, \
        user_id, created_at, last_registered_at, last_status, last_reason, last_result_at, invalidated_at, time_zone
        """

    /// A row of `columns`, read by position (exports and imports read many): the internal key and the device.
    package static func device(_ row: some SQLRow) throws -> (ref: Int64, device: Device) {
        let lastResult = try row.decode(12, as: Int?.self).map { status in
            DeliveryResult(status: status, reason: try row.decode(13), at: try row.date(14))
        }
        let device = Device(
            id: try row.decode(1), instanceID: try row.decode(2),
            platform: Platform(rawValue: try row.decode(3)) ?? .apns, token: try row.decode(4),
            environment: PushEnvironment(rawValue: try row.decode(5)) ?? .production,
            environmentDeclared: try row.decode(6), bundleID: try row.decode(7), metadata: try row.decode(8),
            userID: try row.decode(9), createdAt: try row.date(10), lastRegisteredAt: try row.date(11),
            lastResult: lastResult, invalidatedAt: try row.optionalDate(15), timeZone: try row.decode(16))
        return (try row.decode(0), device)
    }

    /// The internal key of a device, or nil.
    package static func ref(instanceID: String, id: String, on connection: some SQLConnection) throws -> Int64? {
        try connection.fetchOne("SELECT id FROM devices WHERE public_id = \(id) AND instance_id = \(instanceID)") {
            try $0.decode(0, as: Int64.self)
        }
    }

    /// A device and its internal key, by public id.
    package static func find(
        instanceID: String, id: String, on connection: some SQLConnection
    ) throws -> (ref: Int64, device: Device)? {
        try connection.fetchOne(
            """
            SELECT \(raw: columns) FROM devices WHERE public_id = \(id) AND instance_id = \(instanceID)
            """
        ) { try device($0) }
    }

    /// A device by its token.
    package static func find(
        instanceID: String, platform: Platform, token: String, on connection: some SQLConnection
    ) throws -> Device? {
        try connection.fetchOne(
            """
            SELECT \(raw: columns) FROM devices
            WHERE instance_id = \(instanceID) AND platform = \(platform.rawValue) AND token = \(token)
            """
        ) { try device($0).device }
    }

    /// The devices bound to a user, in key order.
    package static func devices(instanceID: String, userID: String, on connection: some SQLConnection) throws
        -> [Device]
    {
        try connection.fetchAll(
            """
            SELECT \(raw: columns) FROM devices WHERE instance_id = \(instanceID) AND user_id = \(userID) ORDER BY id
            """
        ) { try device($0).device }
    }

    /// Registers a device, or refreshes the one that has its token (keeping its id, interests and user); the
    /// backend has checked the device cap. Two nodes registering the same new token at once: one inserts, the other
    /// waits on the unique index and then updates the row the first inserted, so both answer with the same device.
    package static func register(
        _ registration: DeviceRegistration, now: Date, on connection: some SQLConnection
    ) throws -> RegisteredDevice {
        let newID = Device.makeID(platform: registration.platform, at: now)
        let row = try connection.fetchOne(
            """
            INSERT INTO devices (public_id, instance_id, platform, token, environment, environment_declared,
                                 bundle_id, metadata, created_at, last_registered_at)
            VALUES (\(newID), \(registration.instanceID), \(registration.platform.rawValue), \(registration.token),
                    \(registration.environment.rawValue), \(registration.environmentDeclared), \
            \(registration.bundleID), \(registration.metadata), \(now), \(now))
            ON CONFLICT (instance_id, platform, token) DO UPDATE SET
                last_registered_at = excluded.last_registered_at,
                bundle_id = COALESCE(excluded.bundle_id, devices.bundle_id),
                metadata = excluded.metadata,
                environment = CASE WHEN excluded.environment_declared THEN excluded.environment
                                   ELSE devices.environment END,
                environment_declared = devices.environment_declared OR excluded.environment_declared,
                invalidated_at = NULL
            \(returning: [columns])
            """
        ) { try device($0) }
        guard let (ref, device) = row else { throw SQLDecodingError.noSuchColumn("id") }
        let created = device.id == newID
        let interests = created ? [] : try InterestSQL.names(deviceRef: ref, on: connection)
        return RegisteredDevice(device: device, created: created, interests: interests)
    }

    /// Sets a device's time zone (nil clears it); false when there is no such device.
    package static func setTimeZone(
        _ timeZone: String?, instanceID: String, deviceID: String, on connection: some SQLConnection
    ) throws -> Bool {
        try connection.perform(
            """
            UPDATE devices SET time_zone = \(timeZone) WHERE public_id = \(deviceID) AND instance_id = \(instanceID)
            """) > 0
    }

    /// Replaces a device's metadata; false when there is no such device.
    package static func setMetadata(
        _ metadata: String, instanceID: String, deviceID: String, on connection: some SQLConnection
    ) throws -> Bool {
        try connection.perform(
            """
            UPDATE devices SET metadata = \(metadata) WHERE public_id = \(deviceID) AND instance_id = \(instanceID)
            """) > 0
    }

    /// Moves a device to a new token, deleting another device that holds it (`PushStorage.updateToken`); false when
    /// there is no such device of that platform. Both rows are locked (PostgreSQL), so that the holder cannot be bound
    /// to a user between the check and the delete.
    /// - Throws: `PushStoreError.tokenHeldByAnotherUser` when a live holder is bound to another user.
    package static func updateToken(
        instanceID: String, deviceID: String, platform: Platform, token: String, now: Date,
        on connection: some SQLConnection
    ) throws -> Bool {
        let found = try connection.fetchOne(
            """
            SELECT id, user_id FROM devices
            WHERE public_id = \(deviceID) AND instance_id = \(instanceID) AND platform = \(platform.rawValue) \
            \(lock: .forUpdate)
            """
        ) { (ref: try $0.decode(0, as: Int64.self), userID: try $0.decode(1, as: String?.self)) }
        guard let (ref, userID) = found else { return false }
        // (instance, platform, token) is unique, so there is at most one other holder.
        let holder = try connection.fetchOne(
            """
            SELECT user_id, invalidated_at IS NULL FROM devices
            WHERE instance_id = \(instanceID) AND platform = \(platform.rawValue) AND token = \(token) AND id <> \(ref) \
            \(lock: .forUpdate)
            """
        ) { (owner: try $0.decode(0, as: String?.self), live: try $0.decode(1, as: Bool.self)) }
        if let holder, holder.live, let owner = holder.owner, owner != userID {
            throw PushStoreError.tokenHeldByAnotherUser
        }
        // The other holder goes first: (instance, platform, token) is unique. Its interests go with it
        // (ON DELETE CASCADE) and the device count follows (trigger).
        try connection.perform(
            """
            DELETE FROM devices
            WHERE instance_id = \(instanceID) AND platform = \(platform.rawValue) AND token = \(token) AND id <> \(ref)
            """)
        try connection.perform(
            """
            UPDATE devices SET token = \(token), last_registered_at = \(now), invalidated_at = NULL WHERE id = \(ref)
            """)
        return true
    }

    /// Binds a device to a user unless it is bound to another or the user has `maxDevicesPerUser` live devices.
    /// The device's row is locked (PostgreSQL); the backend makes bindings to one user take turns.
    package static func setUser(
        instanceID: String, deviceID: String, userID: String, maxDevicesPerUser: Int, on connection: some SQLConnection
    ) throws -> SetUserResult {
        let found = try connection.fetchOne(
            """
            SELECT id, user_id FROM devices WHERE public_id = \(deviceID) AND instance_id = \(instanceID) \
            \(lock: .forUpdate)
            """
        ) { (ref: try $0.decode(0, as: Int64.self), userID: try $0.decode(1, as: String?.self)) }
        guard let (ref, current) = found else { return .deviceNotFound }
        if current == userID { return .ok }
        if current != nil { return .differentUserAlreadySet }
        let count =
            try connection.fetchOne(
                """
                SELECT count(*) FROM devices WHERE instance_id = \(instanceID) AND user_id = \(userID) \
                AND invalidated_at IS NULL
                """
            ) { try $0.decode(0, as: Int64.self) } ?? 0
        if count >= Int64(maxDevicesPerUser) { return .userHasTooManyDevices }
        try connection.perform("UPDATE devices SET user_id = \(userID) WHERE id = \(ref)")
        return .ok
    }

    /// Which devices a delete removes.
    package enum Selection: Sendable {
        /// One device by public id.
        case device(id: String)
        /// Every device bound to the user.
        case user(String)
    }

    /// Deletes the devices of `selection` (their interests go with them, ON DELETE CASCADE) and returns each as a
    /// removal for the invalidation log, which the caller appends in the same transaction.
    package static func delete(
        _ selection: Selection, instanceID: String, reason: String, on connection: some SQLConnection
    ) throws -> [DeviceInvalidation] {
        let condition: SQLQuery
        switch selection {
        case .device(let id): condition = "public_id = \(id) AND instance_id = \(instanceID)"
        case .user(let userID): condition = "instance_id = \(instanceID) AND user_id = \(userID)"
        }
        let now = Date(millisecondsSince1970: Date().millisecondsSince1970)
        return try connection.fetchAll(
            """
            DELETE FROM devices WHERE \(condition) \(returning: ["instance_id", "public_id", "platform", "token", "user_id"])
            """
        ) { row in
            DeviceInvalidation.removal(
                of: (try row.decode(0), try row.decode(1), try row.decode(2), try row.decode(3), try row.decode(4)),
                reason: reason, at: now)
        }
    }
}
