import Foundation
import PushStore
import SQL

extension SQLitePushStore {
    public func purge(before: Date, limit: Int) async throws -> PurgeResult {
        let cutoff = SQLValue.millis(before)
        let limit = SQLValue.integer(Int64(max(0, limit)))
        // Each DELETE reads a bounded slice of a time index, so one call never holds the writer for long.
        return try await write { connection in
            PurgeResult(
                publishes: try connection.run(
                    """
                    DELETE FROM publish_jobs WHERE id IN (
                        SELECT id FROM publish_jobs WHERE finished_at IS NOT NULL AND finished_at < ? LIMIT ?)
                    """, [cutoff, limit]),
                events: try connection.run(
                    """
                    DELETE FROM events WHERE (instance_id, publish_id, kind, device_id) IN (
                        SELECT instance_id, publish_id, kind, device_id FROM events WHERE at < ? LIMIT ?)
                    """, [cutoff, limit]),
                // Finished webhooks, and the Beams bridge's finished forwards with them.
                webhooks: try connection.run(
                    """
                    DELETE FROM webhooks WHERE id IN (
                        SELECT id FROM webhooks WHERE finished_at IS NOT NULL AND finished_at < ? LIMIT ?)
                    """, [cutoff, limit]) + connection.run(
                    """
                    DELETE FROM beams_forwards WHERE id IN (
                        SELECT id FROM beams_forwards WHERE finished_at IS NOT NULL AND finished_at < ? LIMIT ?)
                    """, [cutoff, limit]),
                devices: try connection.run(
                    """
                    DELETE FROM devices WHERE id IN (
                        SELECT id FROM devices WHERE invalidated_at IS NOT NULL AND invalidated_at < ? LIMIT ?)
                    """, [cutoff, limit]))
        }
    }

    public func purgeUndeliveredDevices(registeredBefore: Date, limit: Int) async throws -> Int {
        try await write { connection in
            try connection.run(
                """
                DELETE FROM devices WHERE id IN (
                    SELECT id FROM devices WHERE last_registered_at < ?
                        AND (last_status IS NULL OR last_status NOT BETWEEN 200 AND 299) LIMIT ?)
                """, [.millis(registeredBefore), .integer(Int64(max(0, limit)))])
        }
    }
}
