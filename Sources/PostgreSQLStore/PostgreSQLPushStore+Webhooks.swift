import Foundation
import PushStore
import StoreSQL

/// The webhook outbox on PostgreSQL: `WebhookSQL`'s statements, and the claim of several nodes.
extension PostgreSQLPushStore {

    /// Claims due webhooks with `FOR UPDATE SKIP LOCKED` (in a MATERIALIZED CTE, so the LIMIT holds): each is
    /// claimed by one node, which hides it for `leaseDuration` by moving its due time.
    package func dueWebhooks(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingWebhook] {
        let hiddenUntil = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            try connection.fetchAll(
                """
                WITH due AS MATERIALIZED (
                    SELECT id, next_attempt_at FROM webhooks WHERE state = 'pending' AND next_attempt_at <= \(now)
                    ORDER BY next_attempt_at, id LIMIT \(max(0, limit)) \(lock: .forUpdateSkipLocked)
                ), claimed AS (
                    UPDATE webhooks w SET next_attempt_at = \(hiddenUntil) FROM due WHERE w.id = due.id
                    RETURNING w.id, w.url, w.body, w.headers, w.attempts, w.created_at
                )
                SELECT c.* FROM claimed c JOIN due ON due.id = c.id ORDER BY due.next_attempt_at, c.id
                """, WebhookSQL.pending)
        }
    }

}
