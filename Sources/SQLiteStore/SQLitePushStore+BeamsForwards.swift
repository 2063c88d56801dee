import Foundation
import PushStore

extension SQLitePushStore: BeamsForwardQueue {
    /// Inserts `forward`, queued at `now` and due at `due` (default: at once), unless its (instance, kind, key) is
    /// queued already; used alone and inside `enqueuePublish`'s write, so a publish and its forward commit together.
    /// - Returns: whether it was inserted.
    static func insertBeamsForward(_ connection: SQLiteConnection, _ forward: BeamsForward, now: Date, due: Date? = nil)
        throws -> Bool
    {
        try connection.run(
            """
            INSERT INTO beams_forwards (instance_id, kind, key, body, next_attempt_at, created_at)
            VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (instance_id, kind, key) DO NOTHING
            """,
            [.text(forward.instanceID), .text(forward.kind.rawValue), .text(forward.key), .blob(forward.body),
             .millis(max(due ?? now, now)), .millis(now)]) > 0
    }

    public func enqueueBeamsForward(_ forward: BeamsForward, now: Date) async throws -> Bool {
        try await write(tenant: forward.instanceID) { connection in
            try Self.insertBeamsForward(connection, forward, now: now)
        }
    }

    public func dueBeamsForwards(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingBeamsForward] {
        let hiddenUntil = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            var due: [PendingBeamsForward] = []
            try connection.query(
                """
                SELECT id, instance_id, kind, key, body, attempts, created_at FROM beams_forwards
                WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?
                """, [.millis(now), .integer(Int64(max(0, limit)))]
            ) { row in
                // A kind this build does not know (written by a newer one) is left for that build.
                guard let kind = BeamsForwardKind(rawValue: row.text(2)) else { return }
                due.append(PendingBeamsForward(
                    id: row.int64(0),
                    forward: BeamsForward(instanceID: row.text(1), kind: kind, key: row.text(3), body: row.blob(4)),
                    attempts: Int(row.int64(5)), createdAt: row.date(6)))
            }
            for forward in due {
                try connection.run("UPDATE beams_forwards SET next_attempt_at = ? WHERE id = ?",
                                   [.integer(hiddenUntil), .integer(forward.id)])
            }
            return due
        }
    }

    public func markBeamsForward(_ id: Int64, outcome: BeamsForwardOutcome, now: Date) async throws {
        try await write { connection in
            let changed: Int
            switch outcome {
            case .delivered(let upstreamID):
                changed = try connection.run(
                    """
                    UPDATE beams_forwards SET state = 'delivered', attempts = attempts + 1, finished_at = ?,
                        upstream_id = ?, last_error = NULL
                    WHERE id = ? AND state = 'pending'
                    """, [.millis(now), .text(upstreamID), .integer(id)])
            case .retry(let at, let error):
                changed = try connection.run(
                    """
                    UPDATE beams_forwards SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?
                    WHERE id = ? AND state = 'pending'
                    """, [.millis(at), .text(error), .integer(id)])
            case .failed(let error):
                changed = try connection.run(
                    """
                    UPDATE beams_forwards SET state = 'failed', attempts = attempts + 1, finished_at = ?, last_error = ?
                    WHERE id = ? AND state = 'pending'
                    """, [.millis(now), .text(error), .integer(id)])
            case .deferred(let until):
                changed = try connection.run(
                    "UPDATE beams_forwards SET next_attempt_at = ? WHERE id = ? AND state = 'pending'",
                    [.millis(until), .integer(id)])
            }
            if changed == 0 { throw PushStoreError.notFound }
        }
    }

    public func nextBeamsForwardDue() async throws -> Date? {
        try await read { connection in
            try connection.first("SELECT MIN(next_attempt_at) FROM beams_forwards WHERE state = 'pending'") {
                $0.optionalDate(0)
            } ?? nil
        }
    }

    public func beamsForward(instanceID: String, publishID: String) async throws -> BeamsForwardRecord? {
        try await read { connection in
            try connection.first(
                """
                SELECT state, attempts, upstream_id, last_error, created_at, finished_at FROM beams_forwards
                WHERE instance_id = ? AND kind IN ('publish_interests', 'publish_users') AND key = ?
                """, [.text(instanceID), .text(publishID)]
            ) { row in
                BeamsForwardRecord(
                    state: BeamsForwardRecord.State(rawValue: row.text(0)) ?? .pending, attempts: Int(row.int64(1)),
                    upstreamID: row.optionalText(2), lastError: row.optionalText(3), createdAt: row.date(4),
                    finishedAt: row.optionalDate(5))
            }
        }
    }
}
