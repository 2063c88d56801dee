import Foundation
import PushStore

extension PostgreSQLPushStore {
    public func purge(before: Date, limit: Int) async throws -> PurgeResult {
        let cutoff = PGValue.millis(before)
        let limit = PGValue.integer(Int64(max(0, limit)))
        // Each DELETE takes a bounded slice of a time index, so one call never holds locks for long; rows another
        // node is purging at the same moment are skipped, not waited for.
        return try await write { connection in
            PurgeResult(
                publishes: try connection.run(
                    """
                    DELETE FROM publish_jobs WHERE id IN (
                        SELECT id FROM publish_jobs WHERE finished_at IS NOT NULL AND finished_at < $1
                        LIMIT $2 FOR UPDATE SKIP LOCKED)
                    """, [cutoff, limit]),
                events: try connection.run(
                    """
                    DELETE FROM events WHERE ctid = ANY(ARRAY(
                        SELECT ctid FROM events WHERE at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))
                    """, [cutoff, limit]),
                // Finished webhooks, and the Beams bridge's finished forwards with them.
                webhooks: try connection.run(
                    """
                    DELETE FROM webhooks WHERE id IN (
                        SELECT id FROM webhooks WHERE finished_at IS NOT NULL AND finished_at < $1
                        LIMIT $2 FOR UPDATE SKIP LOCKED)
                    """, [cutoff, limit]) + connection.run(
                    """
                    DELETE FROM beams_forwards WHERE id IN (
                        SELECT id FROM beams_forwards WHERE finished_at IS NOT NULL AND finished_at < $1
                        LIMIT $2 FOR UPDATE SKIP LOCKED)
                    """, [cutoff, limit]),
                devices: try connection.run(
                    """
                    DELETE FROM devices WHERE id IN (
                        SELECT id FROM devices WHERE invalidated_at IS NOT NULL AND invalidated_at < $1
                        LIMIT $2 FOR UPDATE SKIP LOCKED)
                    """, [cutoff, limit]))
        }
    }

    public func purgeUndeliveredDevices(registeredBefore: Date, limit: Int) async throws -> Int {
        try await write { connection in
            try connection.run(
                """
                DELETE FROM devices WHERE id IN (
                    SELECT id FROM devices WHERE last_registered_at < $1
                        AND (last_status IS NULL OR last_status NOT BETWEEN 200 AND 299)
                    LIMIT $2 FOR UPDATE SKIP LOCKED)
                """, [.millis(registeredBefore), .integer(Int64(max(0, limit)))])
        }
    }
}
