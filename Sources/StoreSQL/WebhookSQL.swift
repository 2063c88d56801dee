import Foundation
import JSON
import PushStore
import SQL

/// The webhook outbox's statements that are the same on SQLite and PostgreSQL. The claim of due webhooks is not
/// among them: SQLite reads and hides them under its one writer, PostgreSQL claims with `FOR UPDATE SKIP LOCKED`;
/// both read the claimed rows with `pending(_:)`.
package enum WebhookSQL {
    /// The columns `pending(_:)` reads.
    package static let pendingColumns = "id, url, body, headers, attempts, created_at"

    /// Queues `request`, due at `now`; returns its id.
    package static func enqueue(_ request: WebhookRequest, now: Date, on connection: some SQLConnection) throws -> Int64
    {
        let headers = JSONValue.object(request.headers.mapValues(JSONValue.string)).jsonText
        let id = try connection.fetchOne(
            """
            INSERT INTO webhooks (url, body, headers, next_attempt_at, created_at)
            VALUES (\(request.url), \(request.body), \(headers), \(now), \(now)) \(returning: ["id"])
            """
        ) { row in try row.decode("id", as: Int64.self) }
        guard let id else { throw SQLDecodingError.noSuchColumn("id") }
        return id
    }

    /// A claimed row (columns `pendingColumns`).
    package static func pending(_ row: some SQLRow) throws -> PendingWebhook {
        let headers =
            try JSONValue(parsing: try row.decode("headers", as: String.self).utf8)
            .objectValue?.compactMapValues(\.stringValue) ?? [:]
        return PendingWebhook(
            id: try row.decode("id"),
            request: WebhookRequest(url: try row.decode("url"), body: try row.decode("body"), headers: headers),
            attempts: try row.decode("attempts"), createdAt: try row.date("created_at"))
    }

    /// When the next pending webhook is due (nil when none is pending).
    package static func nextDue(on connection: some SQLConnection) throws -> Date? {
        try OutboxSQL.nextDue("webhooks", on: connection)
    }

    /// Records the outcome of an attempt on a pending webhook.
    /// - Throws: `PushStoreError.notFound` when it is not pending (finished already, or gone).
    package static func mark(_ id: Int64, outcome: WebhookOutcome, now: Date, on connection: some SQLConnection) throws
    {
        let assignments: SQLQuery
        switch outcome {
        case .delivered:
            assignments = "state = 'delivered', attempts = attempts + 1, finished_at = \(now), last_error = NULL"
        case .retry(let at, let error):
            assignments = "attempts = attempts + 1, next_attempt_at = \(at), last_error = \(error)"
        case .gaveUp(let error):
            assignments = "state = 'gave_up', attempts = attempts + 1, finished_at = \(now), last_error = \(error)"
        case .deferred(let until):
            assignments = "next_attempt_at = \(until)"
        }
        try OutboxSQL.mark("webhooks", id, set: assignments, on: connection)
    }
}
