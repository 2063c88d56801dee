import Foundation
import PushStore
import StoreSQL

/// The Beams bridge outbox on PostgreSQL: `BeamsForwardSQL`'s statements, and the claim of several nodes.
extension PostgreSQLPushStore: BeamsForwardQueue {
    /// `BeamsForwardSQL.insert` inside the caller's transaction (alone, or in `enqueuePublish`'s).
    static func insertBeamsForward(_ connection: PGConnection, _ forward: BeamsForward, now: Date, due: Date? = nil)
        throws -> Bool
    {
        try BeamsForwardSQL.insert(forward, now: now, due: due, on: connection)
    }

    package func enqueueBeamsForward(_ forward: BeamsForward, now: Date) async throws -> Bool {
        try await write(tenant: forward.instanceID) { connection in
            try Self.insertBeamsForward(connection, forward, now: now)
        }
    }

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

    package func markBeamsForward(_ id: Int64, outcome: BeamsForwardOutcome, now: Date) async throws {
        try await write { connection in try BeamsForwardSQL.mark(id, outcome: outcome, now: now, on: connection) }
    }

    package func nextBeamsForwardDue() async throws -> Date? {
        try await read { connection in try BeamsForwardSQL.nextDue(on: connection) }
    }

    package func beamsForward(instanceID: String, publishID: String) async throws -> BeamsForwardRecord? {
        try await read { connection in
            try BeamsForwardSQL.record(instanceID: instanceID, publishID: publishID, on: connection)
        }
    }
}
