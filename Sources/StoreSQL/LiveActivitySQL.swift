import Foundation
import PushStore
import SQL

/// The Live Activity token statements, the same on SQLite and PostgreSQL; each runs inside the caller's transaction.
/// The target pages stay per backend: the job's targets are a JSON array SQLite reads with `json_each`, a `text[]`
/// PostgreSQL compares with `= ANY`.
package enum LiveActivitySQL {
    /// The internal key of the instance's APNs device `deviceID`, nil when there is none. With `lock`, the device row
    /// stays locked to the end of the transaction (PostgreSQL; SQLite's one writer serialises the puts already), so
    /// two concurrent puts for one device cannot both pass the per-device bound.
    package static func apnsDeviceKey(
        instanceID: String, deviceID: String, lock: Bool, on connection: some SQLConnection
    ) throws -> Int64? {
        let clause: SQLQuery = lock ? "\(lock: .forUpdate)" : ""
        return try connection.fetchOne(
            """
            SELECT id FROM devices WHERE public_id = \(deviceID) AND instance_id = \(instanceID) AND platform = 'apns' \
            \(clause)
            """
        ) { try $0.decode(0, as: Int64.self) }
    }

    /// Stores the start token of `attributesType`, replacing the device's token of that type; refused when the device
    /// holds `maxStartTokensPerDevice` others.
    package static func putStartToken(
        instanceID: String, deviceID: String, attributesType: String, token: String, limits: LiveActivityLimits,
        now: Date, on connection: some SQLConnection
    ) throws -> LiveActivityPutResult {
        guard let key = try apnsDeviceKey(instanceID: instanceID, deviceID: deviceID, lock: true, on: connection) else {
            return .deviceNotFound
        }
        let updated = try connection.perform(
            """
            UPDATE live_activity_tokens SET token = \(token), updated_at = \(now)
            WHERE device_id = \(key) AND kind = 'start' AND attributes_type = \(attributesType)
            """)
        if updated > 0 { return .stored(created: false) }
        let held = try count(
            "SELECT count(*) FROM live_activity_tokens WHERE device_id = \(key) AND kind = 'start'",
            on: connection)
        guard held < Int64(limits.maxStartTokensPerDevice) else { return .limitReached(limits.maxStartTokensPerDevice) }
        try connection.perform(
            """
            INSERT INTO live_activity_tokens (device_id, instance_id, kind, attributes_type, token, created_at, updated_at)
            VALUES (\(key), \(instanceID), 'start', \(attributesType), \(token), \(now), \(now))
            """)
        return .stored(created: true)
    }

    /// Stores the update token of `activityID`, replacing the device's token of that activity; refused when the
    /// device holds `maxActivitiesPerDevice` unexpired others (expired ones are deleted to make room).
    package static func putUpdateToken(
        instanceID: String, deviceID: String, activityID: String, attributesType: String, token: String,
        reference: String?, expiresAt: Date, limits: LiveActivityLimits, now: Date, on connection: some SQLConnection
    ) throws -> LiveActivityPutResult {
        guard let key = try apnsDeviceKey(instanceID: instanceID, deviceID: deviceID, lock: true, on: connection) else {
            return .deviceNotFound
        }
        let updated = try connection.perform(
            """
            UPDATE live_activity_tokens SET token = \(token), attributes_type = \(attributesType), \
            reference = \(reference), expires_at = \(expiresAt), updated_at = \(now)
            WHERE device_id = \(key) AND kind = 'update' AND activity_id = \(activityID)
            """)
        if updated > 0 { return .stored(created: false) }
        // Expired rows do not count: an activity ended without the app reporting it must not block new ones.
        let held = try count(
            """
            SELECT count(*) FROM live_activity_tokens WHERE device_id = \(key) AND kind = 'update' AND expires_at > \(now)
            """, on: connection)
        guard held < Int64(limits.maxActivitiesPerDevice) else { return .limitReached(limits.maxActivitiesPerDevice) }
        try connection.perform(
            """
            DELETE FROM live_activity_tokens WHERE device_id = \(key) AND kind = 'update' AND expires_at <= \(now)
            """)
        try connection.perform(
            """
            INSERT INTO live_activity_tokens (device_id, instance_id, kind, attributes_type, activity_id, token,
                reference, expires_at, created_at, updated_at)
            VALUES (\(key), \(instanceID), 'update', \(attributesType), \(activityID), \(token), \(reference), \
            \(expiresAt), \(now), \(now))
            """)
        return .stored(created: true)
    }

    /// Deletes the start token of type `name` or the update token of activity `name`; nil when there is no such
    /// APNs device, else whether a token was deleted.
    package static func delete(
        instanceID: String, deviceID: String, kind: LiveActivityToken.Kind, name: String,
        on connection: some SQLConnection
    ) throws -> Bool? {
        guard let key = try apnsDeviceKey(instanceID: instanceID, deviceID: deviceID, lock: false, on: connection)
        else {
            return nil
        }
        let column = kind == .start ? "attributes_type" : "activity_id"
        return try connection.perform(
            """
            DELETE FROM live_activity_tokens WHERE device_id = \(key) AND kind = \(kind.rawValue) AND \(raw: column) = \(name)
            """) > 0
    }

    /// The device's tokens, start tokens first, each kind in byte order of its name; nil when there is no such APNs
    /// device.
    package static func tokens(
        instanceID: String, deviceID: String, on connection: some SQLConnection
    ) throws -> [LiveActivityToken]? {
        guard try apnsDeviceKey(instanceID: instanceID, deviceID: deviceID, lock: false, on: connection) != nil else {
            return nil
        }
        return try connection.fetchAll(
            """
            SELECT \(raw: columns) FROM live_activity_tokens la JOIN devices d ON d.id = la.device_id
            WHERE d.public_id = \(deviceID) AND d.instance_id = \(instanceID)
            ORDER BY la.kind = 'update', \(byteOrder: "coalesce(la.activity_id, la.attributes_type)")
            """
        ) { row in try token(row) }
    }

    /// Deletes the tokens APNs reported dead, each unless it was renewed since; returns how many.
    package static func deleteDead(_ deaths: [LiveActivityTokenDeath], on connection: some SQLConnection) throws -> Int
    {
        var deleted = 0
        for death in deaths {
            deleted += try connection.perform(
                """
                DELETE FROM live_activity_tokens WHERE id = \(death.ref) AND updated_at < \(death.since)
                """)
        }
        return deleted
    }

    /// Deletes at most `limit` tokens that expired before `before`; rows another node is deleting are passed over
    /// (PostgreSQL). Returns how many.
    package static func purgeExpired(before: Date, limit: Int, on connection: some SQLConnection) throws -> Int {
        try connection.perform(
            """
            DELETE FROM live_activity_tokens WHERE id IN (
                SELECT id FROM live_activity_tokens WHERE expires_at IS NOT NULL AND expires_at < \(before)
                LIMIT \(max(0, limit)) \(lock: .forUpdateSkipLocked))
            """)
    }

    private static func count(_ query: SQLQuery, on connection: some SQLConnection) throws -> Int64 {
        try connection.fetchOne(query) { try $0.decode(0, as: Int64.self) } ?? 0
    }
}

extension LiveActivitySQL {
    /// The token columns `token(_:from:)` reads, in order, from `live_activity_tokens la JOIN devices d`.
    package static let columns = """
        d.public_id, la.kind, la.token, la.attributes_type, la.activity_id, la.reference, la.expires_at, \
        la.created_at, la.updated_at
        """

    /// The token in `columns` read by position from column `offset` on (exports read a device key before them).
    package static func token(_ row: some SQLRow, from offset: Int = 0) throws -> LiveActivityToken {
        LiveActivityToken(
            deviceID: try row.decode(offset),
            kind: LiveActivityToken.Kind(rawValue: try row.decode(offset + 1)) ?? .update,
            token: try row.decode(offset + 2), attributesType: try row.decode(offset + 3),
            activityID: try row.decode(offset + 4), reference: try row.decode(offset + 5),
            expiresAt: try row.optionalDate(offset + 6), createdAt: try row.date(offset + 7),
            updatedAt: try row.date(offset + 8))
    }
}
