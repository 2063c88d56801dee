import Foundation
import PushStore
import StoreSQL

/// The Live Activity tokens on PostgreSQL: the statements are `LiveActivitySQL`'s but for the target page.
extension PostgreSQLPushStore {

    /// The target page stays per backend: the job's targets are compared with `= ANY` here.
    package func liveActivityTargets(
        for job: PublishJob, selector: LiveActivitySelector, after cursor: Int64, limit: Int, now: Date
    ) async throws -> TargetPage {
        let limit = min(max(1, limit), Int.max - 1)
        let audience =
            job.kind == .interests
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
                [
                    .text(job.instanceID), .textArray(job.targets), .text(selector.attributesType),
                    .text(selector.kind.rawValue), .integer(cursor), .text(selector.activityID), .millis(now),
                    .integer(Int64(limit) + 1),
                ])
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

}
