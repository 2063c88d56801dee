import Foundation
import PushStore
import StoreSQL

/// The webhook outbox on SQLite: `WebhookSQL`'s statements, and the claim, which under the one writer is a read
/// followed by moving each claimed webhook's due time.
extension SQLitePushStore {

    package func dueWebhooks(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingWebhook] {
        let hiddenUntil = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            let due = try connection.fetchAll(
                """
                SELECT \(raw: WebhookSQL.pendingColumns) FROM webhooks
                WHERE state = 'pending' AND next_attempt_at <= \(now) ORDER BY next_attempt_at, id LIMIT \(max(0, limit))
                """, WebhookSQL.pending)
            // Claim them: another poller (or this one after a crash) sees them again only after the lease.
            for webhook in due {
                try connection.perform("UPDATE webhooks SET next_attempt_at = \(hiddenUntil) WHERE id = \(webhook.id)")
            }
            return due
        }
    }

}
