import Foundation
import PushStore
import StoreSQL

/// The Beams bridge outbox on PostgreSQL: `BeamsForwardSQL`'s statements, and the claim of several nodes.
extension PostgreSQLPushStore: BeamsForwardQueue {

    /// Claims with `FOR UPDATE SKIP LOCKED` in a MATERIALIZED CTE, as `dueWebhooks` does: each forward goes to one
    /// node, hidden for `leaseDuration`.
    package func dueBeamsForwards(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingBeamsForward]
    {
        let hiddenUntil = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            try connection.fetchAll(
                """
                WITH due AS MATERIALIZED (
                    SELECT id, next_attempt_at FROM beams_forwards WHERE state = 'pending' AND next_attempt_at <= \(now)
                    ORDER BY next_attempt_at, id LIMIT \(max(0, limit)) \(lock: .forUpdateSkipLocked)
                ), claimed AS (
                    UPDATE beams_forwards f SET next_attempt_at = \(hiddenUntil) FROM due WHERE f.id = due.id
                    RETURNING f.id, f.instance_id, f.kind, f.key, f.body, f.attempts, f.created_at
                )
                SELECT c.* FROM claimed c JOIN due ON due.id = c.id ORDER BY due.next_attempt_at, c.id
                """, BeamsForwardSQL.pending
            ).compactMap { $0 }
        }
    }

}
