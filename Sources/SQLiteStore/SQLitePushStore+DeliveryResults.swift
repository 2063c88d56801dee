import Foundation
import PushStore
import SQL
import StoreSQL

extension SQLitePushStore {
    // MARK: Results and reporting

    /// Records results and applies their effects. The invalidation rule (Apple: a 410's timestamp is when the
    /// token stopped being valid) is in the SQL: a device that registered at or after the evidence time keeps
    /// working, because the app has re-sent the token since.
    static func applyDeviceResults(_ results: [DeviceResult], connection: SQLiteConnection) throws {
        // Looked up once per checkpoint, not per result: the statement cache hashes and compares the whole SQL
        // text on every look-up (about 1,700 instructions for this one; callgrind, docs/BENCHMARKS.md).
        let update = try connection.cached(
            """
            UPDATE devices SET
                last_status = ?1, last_reason = ?2, last_result_at = ?3,
                invalidated_at = CASE
                    WHEN ?4 IS NOT NULL AND invalidated_at IS NULL AND last_registered_at < ?4 THEN ?3
                    ELSE invalidated_at END,
                environment = COALESCE(?5, environment)
            WHERE id = ?6
            """)
        // Nearly every result has neither evidence nor an environment correction, and for those the statement
        // above leaves `invalidated_at` and `environment` as they are: this one sets only the three columns that
        // change. SQLite still writes the whole row either way, but a column in the SET list costs an expression,
        // and `invalidated_at` the partial index's test on the old and the new row (1,400 of the 12,700
        // instructions of such an UPDATE in SQLite 3.40; docs/BENCHMARKS.md, issue 26).
        let plainUpdate = try connection.cached(
            "UPDATE devices SET last_status = ?1, last_reason = ?2, last_result_at = ?3 WHERE id = ?4")
        for result in results {
            let (evidence, environment) = DeliveryResultSQL.effect(of: result)
            if evidence == nil && environment == nil {
                try connection.run(plainUpdate) { statement in
                    try statement.bind(.integer(Int64(result.status)), at: 1)
                    try statement.bind(.text(result.reason), at: 2)
                    try statement.bind(.millis(result.at), at: 3)
                    try statement.bind(.integer(result.device), at: 4)
                }
                continue
            }
            // The device this result invalidates, read before the UPDATE: its invalidation is logged with it.
            let dying = try evidence.flatMap { evidence in
                try connection.fetchOne(
                    """
                    SELECT \(raw: DeliveryResultSQL.dyingColumns) FROM devices
                    WHERE id = \(result.device) AND invalidated_at IS NULL AND last_registered_at < \(evidence)
                    """
                ) { row in try DeliveryResultSQL.invalidation(row, of: result) }
            }
            try connection.run(
                update,
                [
                    .integer(Int64(result.status)), .text(result.reason), .millis(result.at), .millis(evidence),
                    .text(environment?.rawValue), .integer(result.device),
                ])
            if let dying { try logInvalidation(dying, connection: connection) }
        }
    }

    /// Appends `records` to the invalidation log, in the caller's transaction, one by one under the one writer.
    package static func logInvalidations(_ records: [DeviceInvalidation], connection: SQLiteConnection) throws {
        for record in records { try logInvalidation(record, connection: connection) }
    }

    /// Appends `record` to the invalidation log, in the caller's transaction.
    static func logInvalidation(_ record: DeviceInvalidation, connection: SQLiteConnection) throws {
        try connection.run(
            """
            INSERT INTO device_invalidations
                (instance_id, device_id, platform, token_mask, user_id, reason, status, provider_at, at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(record.instanceID), .text(record.deviceID), .text(record.platform), .text(record.maskedToken),
                .text(record.userID), .text(record.reason), .integer(Int64(record.status)),
                .millis(record.providerTimestamp), .millis(record.at),
            ])
    }

    /// Whether the publish targeted the device: `json_each` stops at the first match; a users publish names at most
    /// 1000 users, an interests publish at most 100 interests, each looked up by (instance, name) and then
    /// (interest, device).
    package static func publishTargets(userID: String?, ref: Int64?, instanceID: String) -> SQLQuery {
        """
        CASE WHEN kind = 'users' THEN
            \(userID) IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(targets) WHERE value = \(userID))
        ELSE
            \(ref) IS NOT NULL AND EXISTS (
                SELECT 1 FROM json_each(publish_jobs.targets) t
                JOIN interests i ON i.instance_id = \(instanceID) AND i.name = t.value
                JOIN device_interests di ON di.interest_id = i.id AND di.device_id = \(ref))
        END
        """
    }

    package func recordDeviceResults(_ results: [DeviceResult]) async throws {
        try await write(cost: results.count) { try Self.applyDeviceResults(results, connection: $0) }
    }

    package func recordEvents(_ events: [ReportingEvent]) async throws -> Int {
        try await write(tenant: events.first?.instanceID, cost: events.count) { connection in
            var recorded = 0
            for event in events {
                recorded += try connection.run(
                    """
                    INSERT OR IGNORE INTO events (instance_id, publish_id, kind, device_id, user_id, at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .text(event.instanceID), .text(event.publishID), .integer(Int64(event.kind.rawValue)),
                        .text(event.deviceID), .text(event.userID), .millis(event.at),
                    ])
            }
            return recorded
        }
    }

}
