import Foundation
import PushStore

extension SQLitePushStore {
    static let liveActivityColumns = """
        d.public_id, la.kind, la.token, la.attributes_type, la.activity_id, la.reference, la.expires_at,
        la.created_at, la.updated_at
        """

    /// The internal key of the instance's APNs device `deviceID`, nil when there is none.
    static func apnsDeviceKey(_ connection: SQLiteConnection, instanceID: String, deviceID: String) throws -> Int64? {
        try connection.first(
            "SELECT id FROM devices WHERE public_id = ? AND instance_id = ? AND platform = 'apns'",
            [.text(deviceID), .text(instanceID)]) { $0.int64(0) }
    }

    public func putLiveActivityStartToken(
        instanceID: String, deviceID: String, attributesType: String, token: String, limits: LiveActivityLimits,
        now: Date
    ) async throws -> LiveActivityPutResult {
        try await write { connection in
            guard let key = try Self.apnsDeviceKey(connection, instanceID: instanceID, deviceID: deviceID) else {
                return .deviceNotFound
            }
            let updated = try connection.run(
                """
                UPDATE live_activity_tokens SET token = ?, updated_at = ?
                WHERE device_id = ? AND kind = 'start' AND attributes_type = ?
                """, [.text(token), .millis(now), .integer(key), .text(attributesType)])
            if updated > 0 { return .stored(created: false) }
            let held = try connection.first(
                "SELECT count(*) FROM live_activity_tokens WHERE device_id = ? AND kind = 'start'", [.integer(key)]
            ) { $0.int64(0) } ?? 0
            guard held < Int64(limits.maxStartTokensPerDevice) else { return .limitReached(limits.maxStartTokensPerDevice) }
            _ = try connection.run(
                """
                INSERT INTO live_activity_tokens (device_id, instance_id, kind, attributes_type, token, created_at, updated_at)
                VALUES (?, ?, 'start', ?, ?, ?, ?)
                """, [.integer(key), .text(instanceID), .text(attributesType), .text(token), .millis(now), .millis(now)])
            return .stored(created: true)
        }
    }

    public func putLiveActivityUpdateToken(
        instanceID: String, deviceID: String, activityID: String, attributesType: String, token: String,
        reference: String?, expiresAt: Date, limits: LiveActivityLimits, now: Date
    ) async throws -> LiveActivityPutResult {
        try await write { connection in
            guard let key = try Self.apnsDeviceKey(connection, instanceID: instanceID, deviceID: deviceID) else {
                return .deviceNotFound
            }
            let updated = try connection.run(
                """
                UPDATE live_activity_tokens SET token = ?, attributes_type = ?, reference = ?, expires_at = ?, updated_at = ?
                WHERE device_id = ? AND kind = 'update' AND activity_id = ?
                """,
                [.text(token), .text(attributesType), .text(reference), .millis(expiresAt), .millis(now), .integer(key),
                 .text(activityID)])
            if updated > 0 { return .stored(created: false) }
            // Expired rows do not count: an activity ended without the app reporting it must not block new ones.
            let held = try connection.first(
                "SELECT count(*) FROM live_activity_tokens WHERE device_id = ? AND kind = 'update' AND expires_at > ?",
                [.integer(key), .millis(now)]) { $0.int64(0) } ?? 0
            guard held < Int64(limits.maxActivitiesPerDevice) else { return .limitReached(limits.maxActivitiesPerDevice) }
            _ = try connection.run(
                "DELETE FROM live_activity_tokens WHERE device_id = ? AND kind = 'update' AND expires_at <= ?",
                [.integer(key), .millis(now)])
            _ = try connection.run(
                """
                INSERT INTO live_activity_tokens (device_id, instance_id, kind, attributes_type, activity_id, token,
                    reference, expires_at, created_at, updated_at)
                VALUES (?, ?, 'update', ?, ?, ?, ?, ?, ?, ?)
                """,
                [.integer(key), .text(instanceID), .text(attributesType), .text(activityID), .text(token),
                 .text(reference), .millis(expiresAt), .millis(now), .millis(now)])
            return .stored(created: true)
        }
    }

    public func deleteLiveActivityToken(
        instanceID: String, deviceID: String, kind: LiveActivityToken.Kind, name: String
    ) async throws -> Bool? {
        try await write { connection in
            guard let key = try Self.apnsDeviceKey(connection, instanceID: instanceID, deviceID: deviceID) else {
                return nil
            }
            let column = kind == .start ? "attributes_type" : "activity_id"
            return try connection.run(
                "DELETE FROM live_activity_tokens WHERE device_id = ? AND kind = ? AND \(column) = ?",
                [.integer(key), .text(kind.rawValue), .text(name)]) > 0
        }
    }

    public func liveActivityTokens(instanceID: String, deviceID: String) async throws -> [LiveActivityToken]? {
        try await read { connection in
            guard try Self.apnsDeviceKey(connection, instanceID: instanceID, deviceID: deviceID) != nil else { return nil }
            var tokens: [LiveActivityToken] = []
            try connection.query(
                """
                SELECT \(Self.liveActivityColumns) FROM live_activity_tokens la JOIN devices d ON d.id = la.device_id
                WHERE d.public_id = ? AND d.instance_id = ?
                ORDER BY la.kind = 'update', coalesce(la.activity_id, la.attributes_type)
                """, [.text(deviceID), .text(instanceID)]
            ) { row in
                tokens.append(LiveActivityToken(
                    deviceID: row.text(0), kind: LiveActivityToken.Kind(rawValue: row.text(1)) ?? .update,
                    token: row.text(2), attributesType: row.text(3), activityID: row.optionalText(4),
                    reference: row.optionalText(5), expiresAt: row.optionalDate(6), createdAt: row.date(7),
                    updatedAt: row.date(8)))
            }
            return tokens
        }
    }

    public func liveActivityTargets(
        for job: PublishJob, selector: LiveActivitySelector, after cursor: Int64, limit: Int, now: Date
    ) async throws -> TargetPage {
        let limit = max(1, min(limit, Int(Int32.max)))
        let audience = job.kind == .interests
            ? """
              EXISTS (SELECT 1 FROM device_interests di JOIN interests i ON i.id = di.interest_id
                      WHERE di.device_id = d.id AND i.instance_id = ?1 AND i.name IN (SELECT value FROM json_each(?2)))
              """
            : "d.user_id IN (SELECT value FROM json_each(?2))"
        let targetsJSON = try Self.encodeTargets(job.targets)
        return try await read { connection in
            var targets: [Target] = []
            var more = false
            // Walks the instance's rows of this type and kind in id order (index `live_activity_targets`); a
            // device's rows are bounded by the per-device limits.
            try connection.query(
                """
                SELECT la.id, d.public_id, la.token, d.environment, d.environment_declared, la.updated_at, d.user_id,
                    d.time_zone
                FROM live_activity_tokens la JOIN devices d ON d.id = la.device_id
                WHERE la.instance_id = ?1 AND la.attributes_type = ?3 AND la.kind = ?4 AND la.id > ?5
                    AND (?6 IS NULL OR la.activity_id = ?6) AND (la.expires_at IS NULL OR la.expires_at > ?7)
                    AND d.invalidated_at IS NULL AND \(audience)
                ORDER BY la.id LIMIT ?8
                """,
                [.text(job.instanceID), .text(targetsJSON), .text(selector.attributesType), .text(selector.kind.rawValue),
                 .integer(cursor), .text(selector.activityID), .millis(now), .integer(Int64(limit) + 1)]
            ) { row in
                guard targets.count < limit else {
                    more = true
                    return
                }
                targets.append(Target(
                    ref: row.int64(0), deviceID: row.text(1), platform: .apns, token: row.text(2),
                    environment: PushEnvironment(rawValue: row.text(3)) ?? .production,
                    environmentDeclared: row.int64(4) != 0, lastRegisteredAt: row.date(5), userID: row.optionalText(6),
                    timeZone: row.optionalText(7)))
            }
            return TargetPage(targets: targets, cursor: targets.last?.ref ?? cursor, isLast: !more)
        }
    }

    public func deleteDeadLiveActivityTokens(_ deaths: [LiveActivityTokenDeath]) async throws -> Int {
        guard !deaths.isEmpty else { return 0 }
        return try await write { connection in
            var deleted = 0
            for death in deaths {
                deleted += try connection.run(
                    "DELETE FROM live_activity_tokens WHERE id = ? AND updated_at < ?",
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
                    SELECT id FROM live_activity_tokens WHERE expires_at IS NOT NULL AND expires_at < ? LIMIT ?)
                """, [.millis(before), .integer(Int64(max(0, limit)))])
        }
    }
}
