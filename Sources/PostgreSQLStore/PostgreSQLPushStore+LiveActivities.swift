import Foundation
import PushStore

extension PostgreSQLPushStore {
    /// The internal key of the instance's APNs device `deviceID`, nil when there is none. With `lock`, the device
    /// row stays locked to the end of the transaction, so two concurrent puts for one device cannot both pass the
    /// per-device bound.
    static func apnsDeviceKey(_ connection: PGConnection, instanceID: String, deviceID: String, lock: Bool) throws -> Int64? {
        let rows = try connection.query(
            "SELECT id FROM devices WHERE public_id = $1 AND instance_id = $2 AND platform = 'apns'\(lock ? " FOR UPDATE" : "")",
            [.text(deviceID), .text(instanceID)])
        return rows.first { rows.int64($0, 0) }
    }

    public func putLiveActivityStartToken(
        instanceID: String, deviceID: String, attributesType: String, token: String, limits: LiveActivityLimits,
        now: Date
    ) async throws -> LiveActivityPutResult {
        try await write { connection in
            guard let key = try Self.apnsDeviceKey(connection, instanceID: instanceID, deviceID: deviceID, lock: true) else {
                return .deviceNotFound
            }
            let updated = try connection.run(
                """
                UPDATE live_activity_tokens SET token = $1, updated_at = $2
                WHERE device_id = $3 AND kind = 'start' AND attributes_type = $4
                """, [.text(token), .millis(now), .integer(key), .text(attributesType)])
            if updated > 0 { return .stored(created: false) }
            let held = try connection.query(
                "SELECT count(*) FROM live_activity_tokens WHERE device_id = $1 AND kind = 'start'", [.integer(key)])
            guard (held.first { held.int64($0, 0) } ?? 0) < Int64(limits.maxStartTokensPerDevice) else {
                return .limitReached(limits.maxStartTokensPerDevice)
            }
            _ = try connection.run(
                """
                INSERT INTO live_activity_tokens (device_id, instance_id, kind, attributes_type, token, created_at, updated_at)
                VALUES ($1, $2, 'start', $3, $4, $5, $5)
                """, [.integer(key), .text(instanceID), .text(attributesType), .text(token), .millis(now)])
            return .stored(created: true)
        }
    }

    public func putLiveActivityUpdateToken(
        instanceID: String, deviceID: String, activityID: String, attributesType: String, token: String,
        reference: String?, expiresAt: Date, limits: LiveActivityLimits, now: Date
    ) async throws -> LiveActivityPutResult {
        try await write { connection in
            guard let key = try Self.apnsDeviceKey(connection, instanceID: instanceID, deviceID: deviceID, lock: true) else {
                return .deviceNotFound
            }
            let updated = try connection.run(
                """
                UPDATE live_activity_tokens SET token = $1, attributes_type = $2, reference = $3, expires_at = $4,
                    updated_at = $5
                WHERE device_id = $6 AND kind = 'update' AND activity_id = $7
                """,
                [.text(token), .text(attributesType), .text(reference), .millis(expiresAt), .millis(now), .integer(key),
                 .text(activityID)])
            if updated > 0 { return .stored(created: false) }
            // Expired rows do not count: an activity ended without the app reporting it must not block new ones.
            let held = try connection.query(
                "SELECT count(*) FROM live_activity_tokens WHERE device_id = $1 AND kind = 'update' AND expires_at > $2",
                [.integer(key), .millis(now)])
            guard (held.first { held.int64($0, 0) } ?? 0) < Int64(limits.maxActivitiesPerDevice) else {
                return .limitReached(limits.maxActivitiesPerDevice)
            }
            _ = try connection.run(
                "DELETE FROM live_activity_tokens WHERE device_id = $1 AND kind = 'update' AND expires_at <= $2",
                [.integer(key), .millis(now)])
            _ = try connection.run(
                """
                INSERT INTO live_activity_tokens (device_id, instance_id, kind, attributes_type, activity_id, token,
                    reference, expires_at, created_at, updated_at)
                VALUES ($1, $2, 'update', $3, $4, $5, $6, $7, $8, $8)
                """,
                [.integer(key), .text(instanceID), .text(attributesType), .text(activityID), .text(token),
                 .text(reference), .millis(expiresAt), .millis(now)])
            return .stored(created: true)
        }
    }

    public func deleteLiveActivityToken(
        instanceID: String, deviceID: String, kind: LiveActivityToken.Kind, name: String
    ) async throws -> Bool? {
        try await write { connection in
            guard let key = try Self.apnsDeviceKey(connection, instanceID: instanceID, deviceID: deviceID, lock: false) else {
                return nil
            }
            let column = kind == .start ? "attributes_type" : "activity_id"
            return try connection.run(
                "DELETE FROM live_activity_tokens WHERE device_id = $1 AND kind = $2 AND \(column) = $3",
                [.integer(key), .text(kind.rawValue), .text(name)]) > 0
        }
    }

    public func liveActivityTokens(instanceID: String, deviceID: String) async throws -> [LiveActivityToken]? {
        try await read { connection in
            guard try Self.apnsDeviceKey(connection, instanceID: instanceID, deviceID: deviceID, lock: false) != nil else {
                return nil
            }
            let rows = try connection.query(
                """
                SELECT d.public_id, la.kind, la.token, la.attributes_type, la.activity_id, la.reference, la.expires_at,
                    la.created_at, la.updated_at
                FROM live_activity_tokens la JOIN devices d ON d.id = la.device_id
                WHERE d.public_id = $1 AND d.instance_id = $2
                ORDER BY la.kind = 'update', coalesce(la.activity_id, la.attributes_type) COLLATE "C"
                """, [.text(deviceID), .text(instanceID)])
            return rows.map { row in
                LiveActivityToken(
                    deviceID: rows.text(row, 0), kind: LiveActivityToken.Kind(rawValue: rows.text(row, 1)) ?? .update,
                    token: rows.text(row, 2), attributesType: rows.text(row, 3), activityID: rows.optionalText(row, 4),
                    reference: rows.optionalText(row, 5), expiresAt: rows.optionalDate(row, 6),
                    createdAt: rows.date(row, 7), updatedAt: rows.date(row, 8))
            }
        }
    }

    public func liveActivityTargets(
        for job: PublishJob, selector: LiveActivitySelector, after cursor: Int64, limit: Int, now: Date
    ) async throws -> TargetPage {
        let limit = min(max(1, limit), Int.max - 1)
        let audience = job.kind == .interests
            ? """
              EXISTS (SELECT 1 FROM device_interests di JOIN interests i ON i.id = di.interest_id
                      WHERE di.device_id = d.id AND i.instance_id = $1 AND i.name = ANY($2::text[]))
              """
            : "d.user_id = ANY($2::text[])"
        return try await read { connection in
            // Walks the instance's rows of this type and kind in id order (index `live_activity_targets`); a
            // device's rows are bounded by the per-device limits.
            let rows = try connection.query(
                """
                SELECT la.id, d.public_id, la.token, d.environment, d.environment_declared, la.updated_at, d.user_id,
                    d.time_zone
                FROM live_activity_tokens la JOIN devices d ON d.id = la.device_id
                WHERE la.instance_id = $1 AND la.attributes_type = $3 AND la.kind = $4 AND la.id > $5
                    AND ($6::text IS NULL OR la.activity_id = $6::text) AND (la.expires_at IS NULL OR la.expires_at > $7)
                    AND d.invalidated_at IS NULL AND \(audience)
                ORDER BY la.id LIMIT $8
                """,
                [.text(job.instanceID), .textArray(job.targets), .text(selector.attributesType),
                 .text(selector.kind.rawValue), .integer(cursor), .text(selector.activityID), .millis(now),
                 .integer(Int64(limit) + 1)])
            let targets = (0..<min(limit, rows.rowCount)).map { row in
                Target(
                    ref: rows.int64(row, 0), deviceID: rows.text(row, 1), platform: .apns, token: rows.text(row, 2),
                    environment: PushEnvironment(rawValue: rows.text(row, 3)) ?? .production,
                    environmentDeclared: rows.bool(row, 4), lastRegisteredAt: rows.date(row, 5),
                    userID: rows.optionalText(row, 6), timeZone: rows.optionalText(row, 7))
            }
            return TargetPage(targets: targets, cursor: targets.last?.ref ?? cursor, isLast: rows.rowCount <= limit)
        }
    }

    public func deleteDeadLiveActivityTokens(_ deaths: [LiveActivityTokenDeath]) async throws -> Int {
        guard !deaths.isEmpty else { return 0 }
        return try await write { connection in
            var deleted = 0
            for death in deaths {
                deleted += try connection.run(
                    "DELETE FROM live_activity_tokens WHERE id = $1 AND updated_at < $2",
                    [.integer(death.ref), .millis(death.since)])
            }
            return deleted
        }
    }

    public func purgeExpiredLiveActivityTokens(before: Date, limit: Int) async throws -> Int {
        try await write { connection in
            try connection.run(
                """
                DELETE FROM live_activity_tokens WHERE id IN (
                    SELECT id FROM live_activity_tokens WHERE expires_at IS NOT NULL AND expires_at < $1
                    LIMIT $2 FOR UPDATE SKIP LOCKED)
                """, [.millis(before), .integer(Int64(max(0, limit)))])
        }
    }
}
