import Foundation
import PushStore
import StoreSQL

/// The Beams bridge outbox on SQLite: `BeamsForwardSQL`'s statements, and the claim under the one writer.
extension SQLitePushStore: BeamsForwardQueue {
    /// `BeamsForwardSQL.insert` inside the caller's write (alone, or in `enqueuePublish`'s).
    static func insertBeamsForward(_ connection: SQLiteConnection, _ forward: BeamsForward, now: Date, due: Date? = nil)
        throws -> Bool
    {
        try BeamsForwardSQL.insert(forward, now: now, due: due, on: connection)
    }

    package func enqueueBeamsForward(_ forward: BeamsForward, now: Date) async throws -> Bool {
        try await write(tenant: forward.instanceID) { connection in
            try Self.insertBeamsForward(connection, forward, now: now)
        }
    }

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
