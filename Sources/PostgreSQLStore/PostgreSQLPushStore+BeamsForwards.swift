import Foundation
import PushStore

extension PostgreSQLPushStore: BeamsForwardQueue {
    /// Inserts `forward`, queued at `now` and due at `due` (default: at once), unless its (instance, kind, key) is
    /// queued already; used alone and inside `enqueuePublish`'s transaction, so a publish and its forward commit
    /// together. - Returns: whether it was inserted.
    static func insertBeamsForward(_ connection: PGConnection, _ forward: BeamsForward, now: Date, due: Date? = nil)
        throws -> Bool
    {
        try connection.run(
            """
            INSERT INTO beams_forwards (instance_id, kind, key, body, next_attempt_at, created_at)
            VALUES ($1, $2, $3, $4::bytea, $5::bigint, $6::bigint) ON CONFLICT (instance_id, kind, key) DO NOTHING
            """,
            [.text(forward.instanceID), .text(forward.kind.rawValue), .text(forward.key), .bytes(forward.body),
             .millis(max(due ?? now, now)), .millis(now)]) > 0
    }

    public func enqueueBeamsForward(_ forward: BeamsForward, now: Date) async throws -> Bool {
        try await write(tenant: forward.instanceID) { connection in
            try Self.insertBeamsForward(connection, forward, now: now)
        }
    }

    /// Claims with `FOR UPDATE SKIP LOCKED` in a MATERIALIZED CTE, as `dueWebhooks` does: each forward goes to one
    /// node, hidden for `leaseDuration`.
    public func dueBeamsForwards(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingBeamsForward] {
        let hiddenUntil = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            let rows = try connection.query(
                """
                WITH due AS MATERIALIZED (
                    SELECT id, next_attempt_at FROM beams_forwards WHERE state = 'pending' AND next_attempt_at <= $1
                    ORDER BY next_attempt_at, id LIMIT $2 FOR UPDATE SKIP LOCKED
                ), claimed AS (
                    UPDATE beams_forwards f SET next_attempt_at = $3 FROM due WHERE f.id = due.id
                    RETURNING f.id, f.instance_id, f.kind, f.key, f.body, f.attempts, f.created_at
                )
                SELECT c.* FROM claimed c JOIN due ON due.id = c.id ORDER BY due.next_attempt_at, c.id
                """, [.millis(now), .integer(Int64(max(0, limit))), .integer(hiddenUntil)])
            return rows.map { row -> PendingBeamsForward? in
                guard let kind = BeamsForwardKind(rawValue: rows.text(row, 2)) else { return nil }
                return PendingBeamsForward(
                    id: rows.int64(row, 0),
                    forward: BeamsForward(instanceID: rows.text(row, 1), kind: kind, key: rows.text(row, 3),
                                          body: rows.bytes(row, 4)),
                    attempts: Int(rows.int64(row, 5)), createdAt: rows.date(row, 6))
            }.compactMap { $0 }
        }
    }

    public func markBeamsForward(_ id: Int64, outcome: BeamsForwardOutcome, now: Date) async throws {
        try await write { connection in
            let changed: Int
            switch outcome {
            case .delivered(let upstreamID):
                changed = try connection.run(
                    """
                    UPDATE beams_forwards SET state = 'delivered', attempts = attempts + 1, finished_at = $1,
                        upstream_id = $2, last_error = NULL
                    WHERE id = $3 AND state = 'pending'
                    """, [.millis(now), .text(upstreamID), .integer(id)])
            case .retry(let at, let error):
                changed = try connection.run(
                    """
                    UPDATE beams_forwards SET attempts = attempts + 1, next_attempt_at = $1, last_error = $2
                    WHERE id = $3 AND state = 'pending'
                    """, [.millis(at), .text(error), .integer(id)])
            case .failed(let error):
                changed = try connection.run(
                    """
                    UPDATE beams_forwards SET state = 'failed', attempts = attempts + 1, finished_at = $1, last_error = $2
                    WHERE id = $3 AND state = 'pending'
                    """, [.millis(now), .text(error), .integer(id)])
            case .deferred(let until):
                changed = try connection.run(
                    "UPDATE beams_forwards SET next_attempt_at = $1 WHERE id = $2 AND state = 'pending'",
                    [.millis(until), .integer(id)])
            }
            if changed == 0 { throw PushStoreError.notFound }
        }
    }

    public func nextBeamsForwardDue() async throws -> Date? {
        try await read { connection in
            let result = try connection.query("SELECT min(next_attempt_at) FROM beams_forwards WHERE state = 'pending'")
            return result.optionalDate(0, 0)
        }
    }

    public func beamsForward(instanceID: String, publishID: String) async throws -> BeamsForwardRecord? {
        try await read { connection in
            let rows = try connection.query(
                """
                SELECT state, attempts, upstream_id, last_error, created_at, finished_at FROM beams_forwards
                WHERE instance_id = $1 AND kind IN ('publish_interests', 'publish_users') AND key = $2
                """, [.text(instanceID), .text(publishID)])
            return rows.first { row in
                BeamsForwardRecord(
                    state: BeamsForwardRecord.State(rawValue: rows.text(row, 0)) ?? .pending,
                    attempts: Int(rows.int64(row, 1)), upstreamID: rows.optionalText(row, 2),
                    lastError: rows.optionalText(row, 3), createdAt: rows.date(row, 4),
                    finishedAt: rows.optionalDate(row, 5))
            }
        }
    }
}
