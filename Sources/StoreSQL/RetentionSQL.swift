import Foundation
import PushStore
import SQL

/// The retention purges, the same on SQLite and PostgreSQL but for the events' delete (a row-value `IN` on SQLite,
/// `ctid` on PostgreSQL, as `events` has no id), which each backend hands in. Each DELETE takes a bounded slice of a
/// time index, so one call never holds the writer or its locks for long; on PostgreSQL rows another node is purging
/// at the same moment are skipped, not waited for (`FOR UPDATE SKIP LOCKED`, nothing on SQLite).
package enum RetentionSQL {
    /// Deletes at most `limit` finished publishes, finished webhooks and forwards, and invalidated devices older
    /// than `before`, and runs `deleteEvents`.
    package static func purge(
        before: Date, limit: Int, deleteEvents: SQLQuery, on connection: some SQLConnection
    ) throws -> PurgeResult {
        PurgeResult(
            publishes: try deleteSlice(
                "publish_jobs", where: "finished_at IS NOT NULL AND finished_at < \(before)", limit: limit,
                on: connection),
            events: try connection.perform(deleteEvents),
            // Finished webhooks, and the Beams bridge's finished forwards with them.
            webhooks: try deleteSlice(
                "webhooks", where: "finished_at IS NOT NULL AND finished_at < \(before)", limit: limit, on: connection)
                + deleteSlice(
                    "beams_forwards", where: "finished_at IS NOT NULL AND finished_at < \(before)",
                    limit: limit, on: connection),
            devices: try deleteSlice(
                "devices", where: "invalidated_at IS NOT NULL AND invalidated_at < \(before)", limit: limit,
                on: connection))
    }

    /// Deletes at most `limit` devices registered before `registeredBefore` that nobody delivered to.
    package static func purgeUndeliveredDevices(
        registeredBefore: Date, limit: Int, on connection: some SQLConnection
    ) throws -> Int {
        try deleteSlice(
            "devices",
            where: """
                last_registered_at < \(registeredBefore) AND (last_status IS NULL OR last_status NOT BETWEEN 200 AND 299)
                """, limit: limit, on: connection)
    }

    /// Deletes at most `limit` rows of `table` (a constant name) matching `condition`.
    private static func deleteSlice(
        _ table: String, where condition: SQLQuery, limit: Int, on connection: some SQLConnection
    ) throws -> Int {
        try connection.perform(
            """
            DELETE FROM \(raw: table) WHERE id IN (
                SELECT id FROM \(raw: table) WHERE \(condition)
                LIMIT \(max(0, limit)) \(lock: .forUpdateSkipLocked))
            """)
    }
}
