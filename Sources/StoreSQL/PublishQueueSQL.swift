import Foundation
import JSON
import PushStore
import SQL

/// The publish queue's statements, the same on SQLite and PostgreSQL but for what `PublishSchema` names; each runs
/// inside the caller's transaction. What differs stays per backend: the claim (SQLite reads and hides due rows under
/// its one writer; PostgreSQL claims with `FOR UPDATE SKIP LOCKED` in a `MATERIALIZED` CTE), the shards,
/// PostgreSQL's NOTIFYs, and the inserts of a checkpoint's answered ranges (`AnsweredRanges`) and counters (through
/// `json_each` and row by row under SQLite's writer, one `unnest` insert each on PostgreSQL).
package enum PublishQueueSQL {
    /// A job row as `jobColumns` selects it (a claim's `RETURNING` lists the same columns, by position).
    package struct JobRow {
        package var id: PublishJobID
        package var job: PublishJob
        package var cursor: Int64
        package var attempts: Int
        package var leaseExpiresAt: Date?
        package var cancelRequested: Bool
    }

    /// The columns `job(_:)` reads, in order, of the `publish_jobs` row named `table`.
    package static func jobColumns(_ schema: PublishSchema, of table: String = "publish_jobs") -> String {
        // Every claim names them: built once per backend (joining them cost about 30,000 instructions a claim,
        // docs/BENCHMARKS.md "Publish intake").
        guard table == "publish_jobs" else { return columns(schema, of: table) }
        switch schema {
        case .sqlite: return sqliteJobColumns
        case .postgresql: return postgresqlJobColumns
        }
    }

    private static let sqliteJobColumns = columns(.sqlite, of: "publish_jobs")
    private static let postgresqlJobColumns = columns(.postgresql, of: "publish_jobs")

    private static func columns(_ schema: PublishSchema, of table: String) -> String {
        // Joined from the names rather than one interpolated text: the text's short pieces (".trace_parent, ") were
        // inlined as instruction immediates, where lintian's spelling check (Tests/deb) read a word ("arent").
        let head = ["id", "instance_id", "publish_id", "kind"].map { "\(table).\($0)" }
        let tail = [
            "payload", "webhook_url", "created_at", "cursor", "attempts", "lease_expires_at", "not_before",
            "cancel_requested", "trace_parent", "trace_state",
        ].map { "\(table).\($0)" }
        return (head + [schema.targets(of: table)] + tail).joined(separator: ", ")
    }

    /// A row of `jobColumns`, read by position.
    package static func job(_ row: some SQLRow) throws -> JobRow {
        let job = PublishJob(
            instanceID: try row.decode(1), publishID: try row.decode(2),
            kind: PublishKind(rawValue: try row.decode(3)) ?? .interests, targets: try decodeTargets(row.decode(4)),
            payload: try row.decode(5), webhookURL: try row.decode(6), createdAt: try row.date(7),
            notBefore: try row.optionalDate(11), traceParent: try row.decode(13), traceState: try row.decode(14))
        return JobRow(
            id: PublishJobID(rawValue: try row.decode(0)), job: job, cursor: try row.decode(8),
            attempts: try row.decode(9), leaseExpiresAt: try row.optionalDate(10),
            cancelRequested: try row.decode(12))
    }

    /// A job's targets as the JSON array text both backends read them as (`PublishSchema.targets`); SQLite stores
    /// it so.
    package static func encodeTargets(_ targets: [String]) -> String {
        JSONValue.array(targets.map(JSONValue.string)).jsonText
    }

    /// The targets of `encodeTargets`' text.
    /// - Throws: `JSONParseError` when the text is not a JSON array of strings.
    package static func decodeTargets(_ text: String) throws -> [String] {
        let items = try JSONValue(parsing: text.utf8).arrayValue?.map(\.stringValue)
        guard let items, !items.contains(nil) else {
            throw JSONParseError(offset: 0, reason: "not an array of strings")
        }
        return items.compactMap { $0 }
    }

    // MARK: Intake

    /// Counts one publish against the instance's `day`, or throws `publishQuotaReached` (changing nothing) when the
    /// day already holds `quota`; drops the days before yesterday. Runs inside the publish's write, so the count and
    /// the job commit together; on PostgreSQL the upsert locks the instance's row of the day until then, so publishes
    /// of one instance on any number of nodes take turns on it and together never pass the quota.
    package static func countPublish(
        instanceID: String, day: UTCDay, quota: Int, on connection: some SQLConnection
    ) throws {
        let counted = try connection.fetchOne(
            """
            INSERT INTO publish_day_counts (instance_id, day, publishes) VALUES (\(instanceID), \(day.number), 1)
            ON CONFLICT (instance_id, day) DO UPDATE SET publishes = publish_day_counts.publishes + 1
                WHERE publish_day_counts.publishes < \(Int64(quota))
            \(returning: ["publishes"])
            """
        ) { _ in true }
        // A quota of 0 refuses even the day's first publish.
        if counted == nil || quota <= 0 { throw PushStoreError.publishQuotaReached }
        try connection.perform(
            "DELETE FROM publish_day_counts WHERE instance_id = \(instanceID) AND day < \(day.number - 1)")
    }

    /// Inserts `job` as queued; returns its id, or throws `duplicatePublish` when the instance has a job of that
    /// publish id already.
    package static func enqueue(
        _ job: PublishJob, schema: PublishSchema, on connection: some SQLConnection
    ) throws -> PublishJobID {
        let id = try connection.fetchOne(
            """
            INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, webhook_url, created_at,
                not_before, trace_parent, trace_state)
            VALUES (\(job.instanceID), \(job.publishID), \(job.kind.rawValue), \
            \(schema.storedTargets(encodeTargets(job.targets))), \(job.payload), \(job.webhookURL), \(job.createdAt), \
            \(job.notBefore), \(job.traceParent), \(job.traceState))
            \(upsert: ["instance_id", "publish_id"]) \(returning: ["id"])
            """
        ) { try $0.decode(0, as: Int64.self) }
        guard let id else { throw PushStoreError.duplicatePublish(publishID: job.publishID) }
        return PublishJobID(rawValue: id)
    }

    // MARK: A run's writes

    /// The counters stored for `job` (a split job's shards not included).
    package static func counters(job: Int64, on connection: some SQLConnection) throws -> PublishCounters {
        try counters("SELECT name, value FROM publish_counters WHERE job_id = \(job)", on: connection)
    }

    /// The counters stored for `job`, claimed for its `attempt`: none for its first, since only a run writes them
    /// (its checkpoints, under the lease a claim gave it), so the read is left out for a job never run before.
    package static func counters(ofAttempt attempt: Int, job: Int64, on connection: some SQLConnection) throws
        -> PublishCounters
    {
        attempt > 1 ? try counters(job: job, on: connection) : [:]
    }

    /// The counters stored for the publish `publishID` of `instanceID` (a split job's shards not included: on
    /// SQLite, which has none, its status's counters), empty when there is no such publish.
    package static func counters(instanceID: String, publishID: String, on connection: some SQLConnection) throws
        -> PublishCounters
    {
        try counters(
            """
            SELECT c.name, c.value FROM publish_counters c JOIN publish_jobs j ON j.id = c.job_id
            WHERE j.instance_id = \(instanceID) AND j.publish_id = \(publishID)
            """, on: connection)
    }

    /// The counters of `query`'s (name, value) rows.
    private static func counters(_ query: SQLQuery, on connection: some SQLConnection) throws -> PublishCounters {
        var rows: [String: Int64] = [:]
        try connection.forEachRow(query) { row in rows[try row.decode(0)] = try row.decode(1, as: Int64.self) }
        return PublishCounters(storedNames: rows)
    }

    /// Moves the lease of `job` held by `workerID` to `expires`; returns whether a cancel was requested, or throws
    /// `leaseLost`.
    package static func renewLease(
        _ job: PublishJobID, workerID: String, expires: Int64, on connection: some SQLConnection
    ) throws -> Bool {
        let cancelRequested = try connection.fetchOne(
            """
            UPDATE publish_jobs SET lease_expires_at = \(expires)
            WHERE id = \(job.rawValue) AND lease_owner = \(workerID) AND state = 'running'
            \(returning: ["cancel_requested"])
            """
        ) { try $0.decode(0, as: Bool.self) }
        guard let cancelRequested else { throw PushStoreError.leaseLost(job) }
        return cancelRequested
    }

    /// The fence of a run's write: moves the cursor of `job` forward to `cursor` (never back) if `workerID` still
    /// holds its lease, else throws `leaseLost`. The UPDATE locks the job's row (PostgreSQL) and re-reads it, so a
    /// takeover committed meanwhile is seen.
    package static func fence(
        _ job: PublishJobID, workerID: String, cursor: Int64, on connection: some SQLConnection
    ) throws {
        let held = try connection.perform(
            """
            UPDATE publish_jobs SET cursor = \(function: .greatest)(cursor, \(cursor))
            WHERE id = \(job.rawValue) AND lease_owner = \(workerID) AND state = 'running'
            """)
        if held == 0 { throw PushStoreError.leaseLost(job) }
    }

    /// Forgets the answered ranges of `job` whose last ref is at or below `cursor` (the cursor covers them now). A
    /// range the cursor stands inside stays until the cursor passes its end; readers skip its refs at or below the
    /// cursor (`answered(job:on:)`).
    package static func forgetAnswered(job: PublishJobID, through cursor: Int64, on connection: some SQLConnection)
        throws
    {
        // `ref <= cursor` follows from the last ref's bound; written out, it keeps the delete on the key's range.
        try connection.perform(
            """
            DELETE FROM publish_answered
            WHERE job_id = \(job.rawValue) AND ref <= \(cursor) AND coalesce(last_ref, ref) <= \(cursor)
            """)
    }

    /// Forgets every answered ref of `job` (it ended, or starts a new round).
    package static func forgetAnswered(job: Int64, on connection: some SQLConnection) throws {
        try connection.perform("DELETE FROM publish_answered WHERE job_id = \(job)")
    }

    /// Adds `delta` to the counter `name` of `job`.
    package static func addCounter(
        _ name: String, _ delta: Int64, job: PublishJobID, on connection: some SQLConnection
    ) throws {
        try connection.perform(
            """
            INSERT INTO publish_counters (job_id, name, value) VALUES (\(job.rawValue), \(name), \(delta))
            ON CONFLICT (job_id, name) DO UPDATE SET value = publish_counters.value + excluded.value
            """)
    }

    /// The answered refs remembered for `job` above its cursor: its ranges (`AnsweredRanges`) expanded.
    package static func answered(job: PublishJobID, on connection: some SQLConnection) throws -> Set<Int64> {
        var refs = Set<Int64>()
        try connection.forEachRow(
            """
            SELECT a.ref, coalesce(a.last_ref, a.ref), j.cursor
            FROM publish_answered a JOIN publish_jobs j ON j.id = a.job_id
            WHERE a.job_id = \(job.rawValue) AND coalesce(a.last_ref, a.ref) > j.cursor
            """
        ) { row in
            AnsweredRanges.insert(
                first: try row.decode(0), last: try row.decode(1), above: try row.decode(2), into: &refs)
        }
        return refs
    }

    /// Ends `job` held by `workerID` in `state` (final) and forgets its answered refs, or throws `leaseLost`.
    package static func finish(
        _ job: PublishJobID, workerID: String, state: PublishState, targetsTotal: Int64?, summary: String?, now: Date,
        schema: PublishSchema, on connection: some SQLConnection
    ) throws {
        let changed = try connection.perform(
            """
            UPDATE publish_jobs SET \(schema.setState(state)), finished_at = \(now), targets_total = \(targetsTotal),
                summary = \(summary), lease_owner = NULL, lease_expires_at = NULL
            WHERE id = \(job.rawValue) AND lease_owner = \(workerID) AND state = 'running'
            """)
        if changed == 0 { throw PushStoreError.leaseLost(job) }
        // SQLite deletes a key range of this WITHOUT ROWID table, whose rows reference the job, in two passes
        // through a temporary table it builds even when no row matches (~25,000 instructions); most jobs end with
        // none (one run, checkpointed at its cursor), so it looks first (docs/BENCHMARKS.md "Intake's store calls
        // per job").
        let answered: SQLQuery = "SELECT 1 FROM publish_answered WHERE job_id = \(job.rawValue) LIMIT 1"
        if schema == .sqlite, try connection.fetchOne(answered, { _ in true }) == nil { return }
        try forgetAnswered(job: job.rawValue, on: connection)
    }

    /// Hands `job` held by `workerID` back to the queue until `notBefore` (its next local-time round), from its
    /// start, or throws `leaseLost`. On PostgreSQL the row lock makes a claim on another node (SKIP LOCKED) pass
    /// over it until the new round's time is committed.
    package static func reschedule(
        _ job: PublishJobID, workerID: String, notBefore: Date, on connection: some SQLConnection
    ) throws {
        let changed = try connection.perform(
            """
            UPDATE publish_jobs SET state = 'queued', not_before = \(notBefore), cursor = 0, lease_owner = NULL,
                lease_expires_at = NULL
            WHERE id = \(job.rawValue) AND lease_owner = \(workerID) AND state = 'running'
            """)
        if changed == 0 { throw PushStoreError.leaseLost(job) }
        try forgetAnswered(job: job.rawValue, on: connection)
    }

    // MARK: Reads

    /// How many jobs are queued or running (the partial index `publish_jobs_open` holds only those).
    package static func depth(on connection: some SQLConnection) throws -> Int {
        try connection.fetchOne("SELECT count(*) FROM publish_jobs WHERE state IN ('queued', 'running')") {
            try $0.decode(0, as: Int.self)
        } ?? 0
    }

    /// The earliest start of a scheduled job after `now` (the partial index `publish_jobs_scheduled` holds only
    /// queued jobs with a time: one entry is read).
    package static func nextDue(now: Date, schema: PublishSchema, on connection: some SQLConnection) throws -> Date? {
        try connection.fetchOne(
            """
            SELECT min(not_before) FROM publish_jobs \(raw: schema.hint("publish_jobs_scheduled"))
            WHERE state = 'queued' AND not_before IS NOT NULL AND not_before > \(now)
            """
        ) { try $0.optionalDate(0) } ?? nil
    }

    /// The status of the jobs whose ids `jobs` selects, newest first, with their counters and reporting-event counts.
    package static func statuses(
        _ jobs: SQLQuery, schema: PublishSchema, on connection: some SQLConnection
    ) throws -> [PublishStatus] {
        var counters: [Int64: [String: Int64]] = [:]
        try connection.forEachRow(
            "SELECT job_id, name, sum(value) FROM (\(schema.counterRows(jobs: jobs))) AS c GROUP BY job_id, name"
        ) { row in counters[try row.decode(0), default: [:]][try row.decode(1)] = try row.decode(2, as: Int64.self) }
        let delivery = ReportingEvent.Kind.delivery.rawValue
        let open = ReportingEvent.Kind.open.rawValue
        return try connection.fetchAll(
            """
            SELECT j.id, j.instance_id, j.publish_id, j.kind, \(raw: schema.state(of: "j")), j.targets_total, j.summary,
                   j.attempts, j.created_at, j.started_at, j.finished_at, j.not_before, j.cancel_requested,
                   (SELECT count(*) FROM events e WHERE e.instance_id = j.instance_id AND e.publish_id = j.publish_id
                       AND e.kind = \(raw: String(delivery))),
                   (SELECT count(*) FROM events e WHERE e.instance_id = j.instance_id AND e.publish_id = j.publish_id
                       AND e.kind = \(raw: String(open)))
            FROM publish_jobs j WHERE j.id IN (\(jobs)) ORDER BY j.created_at DESC, j.id DESC
            """
        ) { row in
            let id: Int64 = try row.decode(0)
            return PublishStatus(
                id: PublishJobID(rawValue: id), instanceID: try row.decode(1), publishID: try row.decode(2),
                kind: PublishKind(rawValue: try row.decode(3)) ?? .interests,
                state: PublishState(rawValue: try row.decode(4)) ?? .queued,
                counters: PublishCounters(storedNames: counters[id] ?? [:]), targetsTotal: try row.decode(5),
                summary: try row.decode(6), attempts: try row.decode(7), createdAt: try row.date(8),
                startedAt: try row.optionalDate(9), finishedAt: try row.optionalDate(10),
                delivered: try row.decode(13), opened: try row.decode(14), notBefore: try row.optionalDate(11),
                cancelRequested: try row.decode(12))
        }
    }

    /// The status of one job.
    package static func status(job: Int64, schema: PublishSchema, on connection: some SQLConnection) throws
        -> PublishStatus?
    {
        try statuses("SELECT \(job)", schema: schema, on: connection).first
    }

    /// The status of a publish by its id, or nil.
    package static func status(
        instanceID: String, publishID: String, schema: PublishSchema, on connection: some SQLConnection
    ) throws -> PublishStatus? {
        try statuses(
            "SELECT id FROM publish_jobs WHERE instance_id = \(instanceID) AND publish_id = \(publishID)",
            schema: schema, on: connection
        ).first
    }

    /// An instance's latest publishes, newest first, at most `limit`.
    package static func recent(
        instanceID: String, limit: Int, schema: PublishSchema, on connection: some SQLConnection
    ) throws -> [PublishStatus] {
        try statuses(
            """
            SELECT id FROM publish_jobs WHERE instance_id = \(instanceID)
            ORDER BY created_at DESC, id DESC LIMIT \(max(0, limit))
            """, schema: schema, on: connection)
    }

    // MARK: Cancelling

    /// Cancels a publish: a queued (or scheduled) one ends `cancelled` at once; a running one is marked
    /// (`cancel_requested`) and `running` is called with its id, for the backend to tell the nodes running it; one
    /// that ended is left as it is. `audit` is appended when something changed. On PostgreSQL the job's row lock
    /// orders the cancel against a claim, a reschedule or a finish on any node: a claim skips the locked row, and
    /// whatever committed first is what the state read here shows.
    package static func cancel(
        instanceID: String, publishID: String, now: Date, audit: AuditEntry?, schema: PublishSchema,
        on connection: some SQLConnection, running: (Int64) throws -> Void = { _ in }
    ) throws -> PublishCancellation? {
        let found = try connection.fetchOne(
            """
            SELECT id, state FROM publish_jobs WHERE instance_id = \(instanceID) AND publish_id = \(publishID)
            \(lock: .forUpdate)
            """
        ) { row in (try row.decode(0, as: Int64.self), try row.decode(1, as: String.self)) }
        guard let (id, state) = found else { return nil }
        switch PublishState(rawValue: state) {
        case .queued:
            try connection.perform(
                """
                UPDATE publish_jobs SET \(schema.setState(.cancelled)), finished_at = \(now), lease_owner = NULL,
                    lease_expires_at = NULL
                WHERE id = \(id)
                """)
            try forgetAnswered(job: id, on: connection)
            try AuditLogSQL.append(audit, on: connection)
            return try status(job: id, schema: schema, on: connection).map(PublishCancellation.cancelled)
        case .running:
            // The lease holder sees the mark and stops; if it died, the next claimant gets `cancelRequested` and
            // ends the job without sending.
            try connection.perform("UPDATE publish_jobs SET cancel_requested = \(true) WHERE id = \(id)")
            try running(id)
            try AuditLogSQL.append(audit, on: connection)
            return .running(PublishJobID(rawValue: id))
        default:
            return try status(job: id, schema: schema, on: connection).map(PublishCancellation.alreadyEnded)
        }
    }
}
