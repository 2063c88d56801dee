import Foundation
import JSON
import PushStore

extension SQLitePushStore {
    public func enqueueWebhook(_ request: WebhookRequest, now: Date) async throws -> Int64 {
        let headers = JSONValue.object(request.headers.mapValues(JSONValue.string)).jsonText
        return try await write { connection in
            try connection.run(
                "INSERT INTO webhooks (url, body, headers, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?)",
                [.text(request.url), .blob(request.body), .text(headers), .millis(now), .millis(now)])
            return connection.lastInsertRowID
        }
    }

    public func dueWebhooks(now: Date, limit: Int, leaseDuration: Duration) async throws -> [PendingWebhook] {
        let nowMillis = now.millisecondsSince1970
        let hiddenUntil = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            var due: [PendingWebhook] = []
            try connection.query(
                """
                SELECT id, url, body, headers, attempts, created_at FROM webhooks
                WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?
                """, [.integer(nowMillis), .integer(Int64(max(0, limit)))]
            ) { row in
                let headers = try JSONValue(parsing: row.text(3).utf8).objectValue?.compactMapValues(\.stringValue) ?? [:]
                due.append(
                    PendingWebhook(
                        id: row.int64(0), request: WebhookRequest(url: row.text(1), body: row.blob(2), headers: headers),
                        attempts: Int(row.int64(4)), createdAt: row.date(5)))
            }
            // Claim them: another poller (or this one after a crash) sees them again only after the lease.
            for webhook in due {
                try connection.run(
                    "UPDATE webhooks SET next_attempt_at = ? WHERE id = ?", [.integer(hiddenUntil), .integer(webhook.id)])
            }
            return due
        }
    }

    public func nextWebhookDue() async throws -> Date? {
        try await read { connection in
            // The partial index webhooks_due answers MIN without a scan.
            try connection.first("SELECT MIN(next_attempt_at) FROM webhooks WHERE state = 'pending'") { $0.optionalDate(0) }
                ?? nil
        }
    }

    public func markWebhook(_ id: Int64, outcome: WebhookOutcome, now: Date) async throws {
        try await write { connection in
            let changed: Int
            switch outcome {
            case .delivered:
                changed = try connection.run(
                    """
                    UPDATE webhooks SET state = 'delivered', attempts = attempts + 1, finished_at = ?, last_error = NULL
                    WHERE id = ? AND state = 'pending'
                    """, [.millis(now), .integer(id)])
            case .retry(let at, let error):
                changed = try connection.run(
                    """
                    UPDATE webhooks SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?
                    WHERE id = ? AND state = 'pending'
                    """, [.millis(at), .text(error), .integer(id)])
            case .gaveUp(let error):
                changed = try connection.run(
                    """
                    UPDATE webhooks SET state = 'gave_up', attempts = attempts + 1, finished_at = ?, last_error = ?
                    WHERE id = ? AND state = 'pending'
                    """, [.millis(now), .text(error), .integer(id)])
            case .deferred(let until):
                changed = try connection.run(
                    "UPDATE webhooks SET next_attempt_at = ? WHERE id = ? AND state = 'pending'",
                    [.millis(until), .integer(id)])
            }
            if changed == 0 { throw PushStoreError.notFound }
        }
    }
}
