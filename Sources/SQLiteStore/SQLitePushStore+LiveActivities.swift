import Foundation
import PushStore
import StoreSQL

/// The Live Activity tokens on SQLite: the statements are `LiveActivitySQL`'s but for the target page.
extension SQLitePushStore {

    /// The target page stays per backend: the job's targets are read with `json_each` here.
    package func liveActivityTargets(
        for job: PublishJob, selector: LiveActivitySelector, after cursor: Int64, limit: Int, now: Date
    ) async throws -> TargetPage {
        let limit = max(1, min(limit, Int(Int32.max)))
        let audience =
            job.kind == .interests
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
                [
                    .text(job.instanceID), .text(targetsJSON), .text(selector.attributesType),
                    .text(selector.kind.rawValue),
                    .integer(cursor), .text(selector.activityID), .millis(now), .integer(Int64(limit) + 1),
                ]
            ) { row in
                guard targets.count < limit else {
                    more = true
                    return
                }
                targets.append(
                    Target(
                        ref: row.int64(0), deviceID: row.text(1), platform: .apns, token: row.text(2),
                        environment: PushEnvironment(rawValue: row.text(3)) ?? .production,
                        environmentDeclared: row.int64(4) != 0, lastRegisteredAt: row.date(5),
                        userID: row.optionalText(6),
                        timeZone: row.optionalText(7)))
            }
            return TargetPage(targets: targets, cursor: targets.last?.ref ?? cursor, isLast: !more)
        }
    }

}
