import Foundation
import JSON
import PushStore

extension PostgreSQLPushStore {
    static let jobColumns = """
        id, instance_id, publish_id, kind, targets, payload, webhook_url, created_at, cursor, attempts, \
        lease_expires_at, not_before, cancel_requested, trace_parent, trace_state
        """

    static func readJob(_ result: PGResult, _ row: Int) throws
        -> (id: PublishJobID, job: PublishJob, cursor: Int64, attempts: Int, lease: Date?, cancelRequested: Bool)
    {
        let job = PublishJob(
            instanceID: result.text(row, 1), publishID: result.text(row, 2),
            kind: PublishKind(rawValue: result.text(row, 3)) ?? .interests, targets: try readTargets(result, row, 4),
            payload: result.bytes(row, 5), webhookURL: result.optionalText(row, 6), createdAt: result.date(row, 7),
            notBefore: result.optionalDate(row, 11), traceParent: result.optionalText(row, 13),
            traceState: result.optionalText(row, 14))
        return (
            PublishJobID(rawValue: result.int64(row, 0)), job, result.int64(row, 8), Int(result.int64(row, 9)),
            result.optionalDate(row, 10), result.bool(row, 12)
        )
    }

    /// The `targets` column, selected as `array_to_json(targets)::text`: the project's one JSON parser reads it,
    /// instead of a second parser for PostgreSQL's array literal syntax.
    static func readTargets(_ result: PGResult, _ row: Int, _ column: Int) throws -> [String] {
        let items = try JSONValue(parsing: result.text(row, column).utf8).arrayValue?.map(\.stringValue)
        guard let items, !items.contains(nil) else {
            throw PostgreSQLError(sqlstate: nil, message: "publish targets are not an array of strings")
        }
        return items.compactMap { $0 }
    }

    static func counters(_ connection: PGConnection, job: Int64) throws -> PublishCounters {
        let result = try connection.query("SELECT name, value FROM publish_counters WHERE job_id = $1", [.integer(job)])
        var counters: [String: Int64] = [:]
        for row in 0..<result.rowCount { counters[result.text(row, 0)] = result.int64(row, 1) }
        return PublishCounters(storedNames: counters)
    }

    /// Locks the running job's row for this transaction; throws `leaseLost` unless `workerID` holds its lease.
    static func requireLease(_ connection: PGConnection, job: PublishJobID, workerID: String) throws {
        let held =
            try connection.query(
                "SELECT 1 FROM publish_jobs WHERE id = $1 AND lease_owner = $2 AND state = 'running' FOR UPDATE",
                [.integer(job.rawValue), .text(workerID)]
            ).rowCount > 0
        if !held { throw PushStoreError.leaseLost(job) }
    }

    // MARK: Queue

    public func enqueuePublish(_ job: PublishJob) async throws -> PublishJobID {
        try await write(tenant: job.instanceID) { connection in
            if let quota = job.dailyPublishQuota {
                try Self.countPublish(
                    connection, instanceID: job.instanceID, day: UTCDay(containing: job.createdAt),
                    quota: quota)
            }
            let result = try connection.query(
                """
                INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, webhook_url, created_at,
                    not_before, trace_parent, trace_state)
                VALUES ($1, $2, $3, $4::text[], $5::bytea, $6, $7::bigint, $8::bigint, $9, $10)
                ON CONFLICT (instance_id, publish_id) DO NOTHING
                RETURNING id
                """,
                [
                    .text(job.instanceID), .text(job.publishID), .text(job.kind.rawValue), .textArray(job.targets),
                    .bytes(job.payload), .text(job.webhookURL), .millis(job.createdAt), .millis(job.notBefore),
                    .text(job.traceParent), .text(job.traceState),
                ])
            guard let id = result.first({ result.int64($0, 0) }) else {
                throw PushStoreError.duplicatePublish(publishID: job.publishID)
            }
            // The Beams bridge's copy commits with the job: accepted means forwarded, even after a crash. A
            // scheduled publish's copy is due at its start moment.
            if let forward = job.beamsForward {
                _ = try Self.insertBeamsForward(connection, forward, now: job.createdAt, due: job.notBefore)
            }
            // Idle nodes wake for it (delivered on COMMIT); a scheduled one is found by their timers and polls.
            if job.notBefore == nil { try Self.notify(connection, "work") }
            return PublishJobID(rawValue: id)
        }
    }

    /// Counts one publish against the instance's `day`, or throws `publishQuotaReached` when the day already holds
    /// `quota`. The upsert locks the instance's row of the day until the publish commits, so publishes of one
    /// instance on any number of nodes take turns on it and together never pass the quota.
    static func countPublish(_ connection: PGConnection, instanceID: String, day: UTCDay, quota: Int) throws {
        let counted = try connection.query(
            """
            INSERT INTO publish_day_counts (instance_id, day, publishes) VALUES ($1, $2::bigint, 1)
            ON CONFLICT (instance_id, day) DO UPDATE SET publishes = publish_day_counts.publishes + 1
                WHERE publish_day_counts.publishes < $3::bigint
            RETURNING publishes
            """, [.text(instanceID), .integer(day.number), .integer(Int64(quota))])
        // A quota of 0 refuses even the day's first publish.
        if counted.rowCount == 0 || quota <= 0 { throw PushStoreError.publishQuotaReached }
        try connection.run(
            "DELETE FROM publish_day_counts WHERE instance_id = $1 AND day < $2::bigint",
            [.text(instanceID), .integer(day.number - 1)])
    }

    /// The claim: a claimable job of the instance with the fewest runs on the claiming node (`$4`, `$5`: the
    /// instances it runs and how many; `$6` = 1: only other instances, `ClaimPreference`), its oldest, locked with `FOR UPDATE SKIP LOCKED` so claimers on other nodes skip
    /// it instead of waiting, in a MATERIALIZED CTE so the planner cannot re-run the LIMITed subquery inside a join
    /// and claim more rows than one; then leased in the same statement. A queued job is claimable once its
    /// `not_before` (a scheduled publish, or a local-time publish's next round) has come.
    static let claimSQL = """
        WITH next AS MATERIALIZED (
            SELECT id FROM publish_jobs
            WHERE state IN ('queued', 'running')
                AND ((state = 'queued' AND (not_before IS NULL OR not_before <= $1))
                    OR (state = 'running' AND lease_expires_at <= $1))
                AND ($6 = 0 OR instance_id <> ALL ($4::text[]))
            ORDER BY COALESCE((SELECT r.runs FROM unnest($4::text[], $5::bigint[]) AS r(instance, runs)
                               WHERE r.instance = publish_jobs.instance_id), 0), id
            LIMIT 1 FOR UPDATE SKIP LOCKED
        )
        UPDATE publish_jobs j SET state = 'running', lease_owner = $2, lease_expires_at = $3,
            started_at = COALESCE(j.started_at, $1), attempts = j.attempts + 1
        FROM next WHERE j.id = next.id
        RETURNING j.id, j.instance_id, j.publish_id, j.kind, array_to_json(j.targets)::text, j.payload, j.webhook_url,
            j.created_at, j.cursor, j.attempts, j.lease_expires_at, j.not_before, j.cancel_requested, j.trace_parent,
            j.trace_state, j.shards
        """

    public func claimJob(workerID: String, leaseDuration: Duration, now: Date, preference: ClaimPreference) async throws
        -> ClaimedJob?
    {
        let nowMillis = now.millisecondsSince1970
        let expires = now.millisecondsSince1970(after: leaseDuration)
        let (ids, runs) = preference.rankedInstances
        return try await write { connection in
            let result = try connection.query(
                Self.claimSQL,
                [
                    .integer(nowMillis), .text(workerID), .integer(expires), .textArray(ids), .integerArray(runs),
                    .integer(preference.onlyAbsentInstances ? 1 : 0),
                ])
            guard let claimed = try result.first({ try Self.readJob(result, $0) }) else { return nil }
            var job = ClaimedJob(
                id: claimed.id, job: claimed.job, cursor: claimed.cursor,
                counters: try Self.counters(connection, job: claimed.id.rawValue), attempt: claimed.attempts,
                leaseExpiresAt: claimed.lease ?? Date(millisecondsSince1970: expires),
                cancelRequested: claimed.cancelRequested)
            // A split job is claimable as a job only once its shards have all ended (the last one leased it to a
            // node that died before finishing it): the claimant just finishes it.
            if !result.isNull(0, 15) { job.shardsEnded = try Self.shardedEnd(connection, job: claimed.id.rawValue) }
            return job
        }
    }

    @discardableResult
    public func renewLease(_ job: PublishJobID, workerID: String, leaseDuration: Duration, now: Date) async throws
        -> Bool
    {
        let expires = now.millisecondsSince1970(after: leaseDuration)
        return try await writeLease { connection in
            // `lease_expires_at` is in no index: the renewal is a HOT update. `cancel_requested` tells the holder
            // of a cancel made through another node.
            let result = try connection.query(
                """
                UPDATE publish_jobs SET lease_expires_at = $1 WHERE id = $2 AND lease_owner = $3 AND state = 'running'
                RETURNING cancel_requested
                """,
                [.integer(expires), .integer(job.rawValue), .text(workerID)])
            guard let cancelRequested = result.first({ result.bool($0, 0) }) else {
                throw PushStoreError.leaseLost(job)
            }
            return cancelRequested
        }
    }

    public func checkpoint(
        _ job: PublishJobID, workerID: String, cursor: Int64, counters: PublishCounters, deviceResults: [DeviceResult],
        answered: [Int64]
    ) async throws {
        try await writeAlone { connection in
            let id = PGValue.integer(job.rawValue)
            // The device rows first (in id order, `applyDeviceResults`), then this job's own rows, then the fence:
            // the job row is locked only from the fence to COMMIT, so a lease renewal never waits for this
            // transaction's other lock waits. A run that lost its lease fails the fence and none of it is kept.
            try Self.applyDeviceResults(deviceResults, connection: connection)
            // Sorted, as every writer of these keys inserts them: two transactions never wait for each other's.
            let remembered = answered.filter { $0 > cursor }.sorted()
            if !remembered.isEmpty {
                try connection.run(
                    """
                    INSERT INTO publish_answered (job_id, ref) SELECT $1, ref FROM unnest($2::bigint[]) AS a(ref)
                    ON CONFLICT DO NOTHING
                    """, [id, .integerArray(remembered)])
            }
            try connection.run("DELETE FROM publish_answered WHERE job_id = $1 AND ref <= $2", [id, .integer(cursor)])
            let changed = counters.storedNames.filter { $0.value != 0 }.sorted { $0.key < $1.key }
            if !changed.isEmpty {
                try connection.run(
                    """
                    INSERT INTO publish_counters (job_id, name, value)
                    SELECT $1, name, value FROM unnest($2::text[], $3::bigint[]) AS c(name, value)
                    ON CONFLICT (job_id, name) DO UPDATE SET value = publish_counters.value + excluded.value
                    """, [id, .textArray(changed.map(\.key)), .integerArray(changed.map(\.value))])
            }
            // Fenced: the UPDATE re-reads the row it locks, so a takeover committed meanwhile is seen.
            let held = try connection.run(
                """
                UPDATE publish_jobs SET cursor = greatest(cursor, $1)
                WHERE id = $2 AND lease_owner = $3 AND state = 'running'
                """, [.integer(cursor), id, .text(workerID)])
            if held == 0 { throw PushStoreError.leaseLost(job) }
        }
    }

    public func finishJob(
        _ job: PublishJobID, workerID: String, state: PublishState, targetsTotal: Int64?, summary: String?, now: Date
    ) async throws {
        precondition(state.isFinal, "finishJob needs a final state")
        try await write { connection in
            let changed = try connection.run(
                """
                UPDATE publish_jobs SET state = $1, finished_at = $2, targets_total = $3, summary = $4,
                    lease_owner = NULL, lease_expires_at = NULL
                WHERE id = $5 AND lease_owner = $6 AND state = 'running'
                """,
                [
                    .text(state.rawValue), .millis(now), .integer(targetsTotal), .text(summary), .integer(job.rawValue),
                    .text(workerID),
                ])
            if changed == 0 { throw PushStoreError.leaseLost(job) }
            try connection.run("DELETE FROM publish_answered WHERE job_id = $1", [.integer(job.rawValue)])
            try Self.rollUpShards(connection, job: job.rawValue)
        }
    }

    /// A split job's shard counters become job counters and its shards go (nothing for a job delivered whole).
    static func rollUpShards(_ connection: PGConnection, job: Int64) throws {
        try connection.run(
            """
            INSERT INTO publish_counters (job_id, name, value)
            SELECT $1, c.name, sum(c.value)::bigint
            FROM publish_shards s, unnest(s.counter_names, s.counter_values) AS c(name, value)
            WHERE s.job_id = $1 GROUP BY c.name
            ON CONFLICT (job_id, name) DO UPDATE SET value = publish_counters.value + excluded.value
            """, [.integer(job)])
        try connection.run("DELETE FROM publish_shards WHERE job_id = $1", [.integer(job)])
    }

    public func answeredTargets(_ job: PublishJobID) async throws -> Set<Int64> {
        try await read { connection in
            let result = try connection.query(
                "SELECT ref FROM publish_answered WHERE job_id = $1", [.integer(job.rawValue)])
            return Set(result.map { result.int64($0, 0) })
        }
    }

    /// The status of jobs `ids` with their counters and reporting-event counts, in the order of `ids`.
    static func statuses(_ connection: PGConnection, jobs ids: [Int64]) throws -> [PublishStatus] {
        guard !ids.isEmpty else { return [] }
        let rows = try connection.query(
            """
            SELECT j.id, j.instance_id, j.publish_id, j.kind, j.state, j.targets_total, j.summary, j.attempts,
                   j.created_at, j.started_at, j.finished_at, j.not_before, j.cancel_requested,
                   (SELECT count(*) FROM events e WHERE e.instance_id = j.instance_id AND e.publish_id = j.publish_id
                       AND e.kind = \(ReportingEvent.Kind.delivery.rawValue)),
                   (SELECT count(*) FROM events e WHERE e.instance_id = j.instance_id AND e.publish_id = j.publish_id
                       AND e.kind = \(ReportingEvent.Kind.open.rawValue))
            FROM publish_jobs j WHERE j.id = ANY($1::bigint[])
            """, [.integerArray(ids)])
        // A split job still running has its counters in its shards (rolled up when it ends).
        let counterRows = try connection.query(
            """
            SELECT job_id, name, value FROM publish_counters WHERE job_id = ANY($1::bigint[])
            UNION ALL
            SELECT s.job_id, c.name, sum(c.value)::bigint
            FROM publish_shards s, unnest(s.counter_names, s.counter_values) AS c(name, value)
            WHERE s.job_id = ANY($1::bigint[]) GROUP BY s.job_id, c.name
            """, [.integerArray(ids)])
        var counters: [Int64: [String: Int64]] = [:]
        for row in 0..<counterRows.rowCount {
            counters[counterRows.int64(row, 0), default: [:]][counterRows.text(row, 1), default: 0] +=
                counterRows.int64(row, 2)
        }
        var byID: [Int64: PublishStatus] = [:]
        for row in 0..<rows.rowCount {
            let id = rows.int64(row, 0)
            byID[id] = PublishStatus(
                id: PublishJobID(rawValue: id), instanceID: rows.text(row, 1), publishID: rows.text(row, 2),
                kind: PublishKind(rawValue: rows.text(row, 3)) ?? .interests,
                state: PublishState(rawValue: rows.text(row, 4)) ?? .queued,
                counters: PublishCounters(storedNames: counters[id] ?? [:]),
                targetsTotal: rows.optionalInt64(row, 5), summary: rows.optionalText(row, 6),
                attempts: Int(rows.int64(row, 7)), createdAt: rows.date(row, 8), startedAt: rows.optionalDate(row, 9),
                finishedAt: rows.optionalDate(row, 10), delivered: Int(rows.int64(row, 13)),
                opened: Int(rows.int64(row, 14)), notBefore: rows.optionalDate(row, 11),
                cancelRequested: rows.bool(row, 12))
        }
        return ids.compactMap { byID[$0] }
    }

    public func publishStatus(instanceID: String, publishID: String) async throws -> PublishStatus? {
        try await read { connection in
            let found = try connection.query(
                "SELECT id FROM publish_jobs WHERE instance_id = $1 AND publish_id = $2",
                [.text(instanceID), .text(publishID)])
            guard let id = found.first({ found.int64($0, 0) }) else { return nil }
            return try Self.statuses(connection, jobs: [id]).first
        }
    }

    public func recentPublishes(instanceID: String, limit: Int) async throws -> [PublishStatus] {
        try await read { connection in
            let found = try connection.query(
                "SELECT id FROM publish_jobs WHERE instance_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
                [.text(instanceID), .integer(Int64(max(0, limit)))])
            return try Self.statuses(connection, jobs: found.map { found.int64($0, 0) })
        }
    }

    public func queueDepth() async throws -> Int {
        try await read { connection in
            // The partial index publish_jobs_open holds only unfinished jobs.
            Int(
                try connection.query("SELECT count(*) FROM publish_jobs WHERE state IN ('queued', 'running')").int64(
                    0, 0))
        }
    }

    // MARK: Scheduling and cancelling

    public func nextPublishDue(now: Date) async throws -> Date? {
        try await read { connection in
            // The partial index publish_jobs_scheduled holds only queued jobs with a time: one entry is read.
            let result = try connection.query(
                """
                SELECT min(not_before) FROM publish_jobs
                WHERE state = 'queued' AND not_before IS NOT NULL AND not_before > $1
                """, [.millis(now)])
            return result.first { result.optionalDate($0, 0) } ?? nil
        }
    }

    public func rescheduleJob(_ job: PublishJobID, workerID: String, notBefore: Date) async throws {
        try await write { connection in
            // Fenced like a checkpoint: only the lease holder hands the job back, and the row lock it takes makes
            // a claim on another node (SKIP LOCKED) pass over it until the new round's time is committed.
            let changed = try connection.run(
                """
                UPDATE publish_jobs SET state = 'queued', not_before = $1, cursor = 0, lease_owner = NULL,
                    lease_expires_at = NULL
                WHERE id = $2 AND lease_owner = $3 AND state = 'running'
                """, [.millis(notBefore), .integer(job.rawValue), .text(workerID)])
            if changed == 0 { throw PushStoreError.leaseLost(job) }
            try connection.run("DELETE FROM publish_answered WHERE job_id = $1", [.integer(job.rawValue)])
        }
    }

    public func cancelPublish(instanceID: String, publishID: String, now: Date, audit: AuditEntry?) async throws
        -> PublishCancellation?
    {
        try await write { connection in
            // The row lock orders the cancel against a claim, a reschedule or a finish on any node: a claim
            // skips the locked row, and whatever committed first is what the state read here shows.
            let found = try connection.query(
                "SELECT id, state FROM publish_jobs WHERE instance_id = $1 AND publish_id = $2 FOR UPDATE",
                [.text(instanceID), .text(publishID)])
            guard let (id, state) = found.first({ (found.int64($0, 0), found.text($0, 1)) }) else { return nil }
            switch PublishState(rawValue: state) {
            case .queued:
                try connection.run(
                    """
                    UPDATE publish_jobs SET state = 'cancelled', finished_at = $1, lease_owner = NULL,
                        lease_expires_at = NULL
                    WHERE id = $2
                    """, [.millis(now), .integer(id)])
                try connection.run("DELETE FROM publish_answered WHERE job_id = $1", [.integer(id)])
                try Self.append(audit, connection)
                return try Self.statuses(connection, jobs: [id]).first.map(PublishCancellation.cancelled)
            case .running:
                // The lease holder (on this node or another) sees the mark and stops; if it died, the next
                // claimant gets `cancelRequested` and ends the job without sending.
                try connection.run("UPDATE publish_jobs SET cancel_requested = true WHERE id = $1", [.integer(id)])
                // Every node running a part of it (a shard) stops at once instead of at its next lease renewal.
                try Self.notify(connection, "cancel:\(id)")
                try Self.append(audit, connection)
                return .running(PublishJobID(rawValue: id))
            default:
                return try Self.statuses(connection, jobs: [id]).first.map(PublishCancellation.alreadyEnded)
            }
        }
    }
}
