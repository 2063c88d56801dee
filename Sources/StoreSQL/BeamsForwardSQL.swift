import Foundation
import PushStore
import SQL

/// The Beams bridge outbox's statements that are the same on SQLite and PostgreSQL. As for webhooks, the claim
/// stays per backend and reads the claimed rows with `pending(_:)`.
package enum BeamsForwardSQL {
    /// The columns `pending(_:)` reads.
    package static let pendingColumns = "id, instance_id, kind, key, body, attempts, created_at"

    /// Inserts `forward`, queued at `now` and due at `due` (default: at once), unless its (instance, kind, key) is
    /// queued already; used alone and inside `enqueuePublish`'s transaction, so a publish and its forward commit
    /// together.
    /// - Returns: whether it was inserted.
    package static func insert(
        _ forward: BeamsForward, now: Date, due: Date? = nil, on connection: some SQLConnection
    ) throws -> Bool {
        try connection.perform(
            """
            INSERT INTO beams_forwards (instance_id, kind, key, body, next_attempt_at, created_at)
            VALUES (\(forward.instanceID), \(forward.kind.rawValue), \(forward.key), \(forward.body), \
            \(max(due ?? now, now)), \(now)) \(upsert: ["instance_id", "kind", "key"])
            """) > 0
    }

    /// A claimed row (columns `pendingColumns`); nil for a kind this build does not know (written by a newer one),
    /// which is left for that build.
    package static func pending(_ row: some SQLRow) throws -> PendingBeamsForward? {
        guard let kind = BeamsForwardKind(rawValue: try row.decode("kind")) else { return nil }
        return PendingBeamsForward(
            id: try row.decode("id"),
            forward: BeamsForward(
                instanceID: try row.decode("instance_id"), kind: kind, key: try row.decode("key"),
                body: try row.decode("body")),
            attempts: try row.decode("attempts"), createdAt: try row.date("created_at"))
    }

    /// Records the outcome of an attempt on a pending forward.
    /// - Throws: `PushStoreError.notFound` when it is not pending.
    package static func mark(
        _ id: Int64, outcome: BeamsForwardOutcome, now: Date, on connection: some SQLConnection
    ) throws {
        let assignments: SQLQuery
        switch outcome {
        case .delivered(let upstreamID):
            assignments = """
                state = 'delivered', attempts = attempts + 1, finished_at = \(now), upstream_id = \(upstreamID), \
                last_error = NULL
                """
        case .retry(let at, let error):
            assignments = "attempts = attempts + 1, next_attempt_at = \(at), last_error = \(error)"
        case .failed(let error):
            assignments = "state = 'failed', attempts = attempts + 1, finished_at = \(now), last_error = \(error)"
        case .deferred(let until):
            assignments = "next_attempt_at = \(until)"
        }
        try OutboxSQL.mark("beams_forwards", id, set: assignments, on: connection)
    }

    /// When the next pending forward is due, nil when none is pending.
    package static func nextDue(on connection: some SQLConnection) throws -> Date? {
        try OutboxSQL.nextDue("beams_forwards", on: connection)
    }

    /// The forward of a publish (either kind of publish), or nil.
    package static func record(
        instanceID: String, publishID: String, on connection: some SQLConnection
    ) throws -> BeamsForwardRecord? {
        try connection.fetchOne(
            """
            SELECT state, attempts, upstream_id, last_error, created_at, finished_at FROM beams_forwards
            WHERE instance_id = \(instanceID) AND kind IN ('publish_interests', 'publish_users') AND key = \(publishID)
            """
        ) { row in
            BeamsForwardRecord(
                state: BeamsForwardRecord.State(rawValue: try row.decode("state")) ?? .pending,
                attempts: try row.decode("attempts"), upstreamID: try row.decode("upstream_id"),
                lastError: try row.decode("last_error"), createdAt: try row.date("created_at"),
                finishedAt: try row.optionalDate("finished_at"))
        }
    }
}
