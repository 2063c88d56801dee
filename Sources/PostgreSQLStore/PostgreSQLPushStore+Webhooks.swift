import Foundation
import JSON
import PushStore

extension PostgreSQLPushStore {
    public func enqueueWebhook(_ request: WebhookRequest, now: Date) async throws -> Int64 {
        let headers = JSONValue.object(request.headers.mapValues(JSONValue.string)).jsonText
        return try await write { connection in
            let result = try connection.query(
                """
                INSERT INTO webhooks (url, body, headers, next_attempt_at, created_at)
                VALUES ($1, $2::bytea, $3, $4::bigint, $4::bigint) RETURNING id
                """, [.text(request.url), .bytes(request.body), .text(headers), .millis(now)])
            return result.int64(0, 0)
        }
    }

    /// Claims due webhooks with `FOR UPDATE SKIP LOCKED` (in a MATERIALIZED CTE, so the LIMIT holds): each is
    /// claimed by one node, which hides it for `leaseDuration` by moving its due time.
    public func dueWebhooks(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingWebhook] {
        let nowMillis = now.millisecondsSince1970
        let hiddenUntil = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            let rows = try connection.query(
                """
                WITH due AS MATERIALIZED (
                    SELECT id, next_attempt_at FROM webhooks WHERE state = 'pending' AND next_attempt_at <= $1
                    ORDER BY next_attempt_at, id LIMIT $2 FOR UPDATE SKIP LOCKED
                ), claimed AS (
                    UPDATE webhooks w SET next_attempt_at = $3 FROM due WHERE w.id = due.id
                    RETURNING w.id, w.url, w.body, w.headers, w.attempts, w.created_at
                )
                SELECT c.* FROM claimed c JOIN due ON due.id = c.id ORDER BY due.next_attempt_at, c.id
                """, [.integer(nowMillis), .integer(Int64(max(0, limit))), .integer(hiddenUntil)])
            return try rows.map { row in
                let headers = try JSONValue(parsing: rows.text(row, 3).utf8).objectValue?.compactMapValues(\.stringValue) ?? [:]
                return PendingWebhook(
                    id: rows.int64(row, 0),
                    request: WebhookRequest(url: rows.text(row, 1), body: rows.bytes(row, 2), headers: headers),
                    attempts: Int(rows.int64(row, 4)), createdAt: rows.date(row, 5))
            }
        }
    }

    public func nextWebhookDue() async throws -> Date? {
        try await read { connection in
            // The partial index webhooks_due answers MIN without a scan.
            let result = try connection.query("SELECT min(next_attempt_at) FROM webhooks WHERE state = 'pending'")
            return result.optionalDate(0, 0)
        }
    }

    public func markWebhook(_ id: Int64, outcome: WebhookOutcome, now: Date) async throws {
        try await write { connection in
            let changed: Int
            switch outcome {
            case .delivered:
                changed = try connection.run(
                    """
                    UPDATE webhooks SET state = 'delivered', attempts = attempts + 1, finished_at = $1, last_error = NULL
                    WHERE id = $2 AND state = 'pending'
                    """, [.millis(now), .integer(id)])
            case .retry(let at, let error):
                changed = try connection.run(
                    """
                    UPDATE webhooks SET attempts = attempts + 1, next_attempt_at = $1, last_error = $2
                    WHERE id = $3 AND state = 'pending'
                    """, [.millis(at), .text(error), .integer(id)])
            case .gaveUp(let error):
                changed = try connection.run(
                    """
                    UPDATE webhooks SET state = 'gave_up', attempts = attempts + 1, finished_at = $1, last_error = $2
                    WHERE id = $3 AND state = 'pending'
                    """, [.millis(now), .text(error), .integer(id)])
            case .deferred(let until):
                changed = try connection.run(
                    "UPDATE webhooks SET next_attempt_at = $1 WHERE id = $2 AND state = 'pending'",
                    [.millis(until), .integer(id)])
            }
            if changed == 0 { throw PushStoreError.notFound }
        }
    }
}
