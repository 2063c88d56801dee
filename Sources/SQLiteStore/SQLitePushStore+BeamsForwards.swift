import Foundation
import PushStore
import StoreSQL

/// The Beams bridge outbox on SQLite: `BeamsForwardSQL`'s statements, and the claim under the one writer.
extension SQLitePushStore: BeamsForwardQueue {

    package func dueBeamsForwards(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingBeamsForward]
    {
        let hiddenUntil = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            let due = try connection.fetchAll(
                """
                SELECT \(raw: BeamsForwardSQL.pendingColumns) FROM beams_forwards
                WHERE state = 'pending' AND next_attempt_at <= \(now) ORDER BY next_attempt_at, id LIMIT \(max(0, limit))
                """, BeamsForwardSQL.pending
            ).compactMap { $0 }
            for forward in due {
                try connection.perform(
                    "UPDATE beams_forwards SET next_attempt_at = \(hiddenUntil) WHERE id = \(forward.id)")
            }
            return due
        }
    }

}
