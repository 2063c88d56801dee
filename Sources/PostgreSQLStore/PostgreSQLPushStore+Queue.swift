import Foundation
import PushStore
import SQL
import StoreSQL

/// The publish queue on PostgreSQL: the statements are `PublishQueueSQL`'s but for the claim (`FOR UPDATE SKIP
/// LOCKED` in a `MATERIALIZED` CTE), the shards, the NOTIFYs, and a checkpoint's answered refs and counters (one
/// `unnest` insert each).
extension PostgreSQLPushStore {
    /// The claim when the node ranks instances (`ClaimPreference`): a claimable job of the instance with the fewest
    /// runs on the claiming node (`$4`, `$5`: the instances it runs and how many; `$6` = 1: only other instances),
    /// its oldest; then leased in the same statement. Read through `publish_jobs_open_by_instance` (step 18) as
    /// SQLite's step 19 claim reads it: `candidates` skips along the index from instance to instance, one seek each
    /// for the next instance's oldest claimable job, and only those candidates (one per instance) are sorted, never
    /// the backlog. Sorting every claimable job by its instance's runs, as this claim did before, took 208 ms per
    /// claim behind 33,000 queued publishes (docs/BENCHMARKS.md "PostgreSQL: the claim behind a backlog").
    ///
    /// The candidates are read without locks; then, in rank order (`ranked` is sorted in a subquery, so the
    /// nested loop over it keeps that order and the top `LIMIT` stops it at the first row), the candidate's
    /// instance is read from its candidate on with `FOR UPDATE SKIP LOCKED`: a claimer on another node holding that
    /// job makes this one take the same instance's next claimable job (or the next instance's) instead of waiting,
    /// and a row locked after a wait-free check is re-checked (a job leased meanwhile is no longer claimable and is
    /// skipped). Only one instance's rows are locked in the usual case. That seek bounds `instance_id` from both
    /// sides (a row comparison and `<=`) instead of with `=`: with an equality the planner may read
    /// `publish_jobs_open` in id order filtering on the instance, which walks the whole backlog to reach an instance
    /// whose jobs are all newest. `next` is MATERIALIZED so the planner cannot re-run the LIMITed subquery inside
    /// the join and claim more rows than one. A queued job is claimable once its `not_before` (a scheduled
    /// publish, or a local-time publish's next round) has come; a running one once its lease has expired.
    static let claimSQL = """
        WITH RECURSIVE candidates (instance, id) AS (
            (SELECT p.instance_id, p.id FROM publish_jobs p WHERE \(claimable)
                ORDER BY p.instance_id, p.id LIMIT 1)
            UNION ALL
            SELECT n.instance_id, n.id FROM candidates c
            CROSS JOIN LATERAL (
                SELECT p.instance_id, p.id FROM publish_jobs p WHERE p.instance_id > c.instance AND \(claimable)
                ORDER BY p.instance_id, p.id LIMIT 1
            ) n
        ),
        next AS MATERIALIZED (
            SELECT locked.id FROM (
                SELECT c.instance, COALESCE(r.runs, 0) AS runs, c.id
                FROM candidates c
                LEFT JOIN unnest($4::text[], $5::bigint[]) AS r(instance, runs) ON r.instance = c.instance
                WHERE $6 = 0 OR c.instance <> ALL ($4::text[])
                ORDER BY runs, c.id
            ) ranked
            CROSS JOIN LATERAL (
                SELECT p.id FROM publish_jobs p
                WHERE (p.instance_id, p.id) >= (ranked.instance, ranked.id) AND p.instance_id <= ranked.instance
                    AND \(claimable)
                ORDER BY p.instance_id, p.id LIMIT 1 FOR UPDATE SKIP LOCKED
            ) locked
            ORDER BY ranked.runs, ranked.id LIMIT 1
        )
        \(lease)
        """

    /// The claim when the node runs nothing yet (`ClaimPreference.oldestFirst`): the oldest claimable job, read in
    /// id order from `publish_jobs_open`, locked with `FOR UPDATE SKIP LOCKED` (a claimer on another node holding
    /// it makes this one take the next), leased in the same statement.
    static let claimOldestSQL = """
        WITH next AS MATERIALIZED (
            SELECT p.id FROM publish_jobs p WHERE \(claimable)
            ORDER BY p.id LIMIT 1 FOR UPDATE SKIP LOCKED
        )
        \(lease)
        """

    /// Whether the job `p` may be claimed at `$1`: the predicate of both open-job indexes, then queued and due, or
    /// running under an expired lease. The second part is wrapped in a CASE so the planner estimates it at its
    /// default (half the rows) instead of from `state`'s statistics: with open jobs a small share of the table (2,000
    /// queued after 200,000 finished), those said almost no open job was claimable, and the planner preferred
    /// reading every open job and sorting them to a seek that stops at the first (a 3.5x slower claim than the old
    /// sort, bench/postgresql/claim.py), and for the lock a bitmap of `publish_jobs_recent`; `QueryPlanTests` checks
    /// the plans on such a table.
    private static let claimable = """
        p.state IN ('queued', 'running')
                AND CASE WHEN (p.state = 'queued' AND (p.not_before IS NULL OR p.not_before <= $1))
                    OR (p.state = 'running' AND p.lease_expires_at <= $1) THEN true ELSE false END
        """

    /// The lease both claims end with: the job chosen in `next` leased to `$2` until `$3`, and its columns returned.
    private static let lease = """
        UPDATE publish_jobs j SET state = 'running', lease_owner = $2, lease_expires_at = $3,
            started_at = COALESCE(j.started_at, $1), attempts = j.attempts + 1
        FROM next WHERE j.id = next.id
        RETURNING j.id, j.instance_id, j.publish_id, j.kind, array_to_json(j.targets)::text, j.payload, j.webhook_url,
            j.created_at, j.cursor, j.attempts, j.lease_expires_at, j.not_before, j.cancel_requested, j.trace_parent,
            j.trace_state, j.shards
        """

    package func claimJob(workerID: String, leaseDuration: Duration, now: Date, preference: ClaimPreference)
        async throws
        -> ClaimedJob?
    {
        let nowMillis = now.millisecondsSince1970
        let expires = now.millisecondsSince1970(after: leaseDuration)
        let (ids, runs) = preference.rankedInstances
        return try await write { connection in
            let result =
                ids.isEmpty
                ? try connection.query(Self.claimOldestSQL, [.integer(nowMillis), .text(workerID), .integer(expires)])
                : try connection.query(
                    Self.claimSQL,
                    [
                        .integer(nowMillis), .text(workerID), .integer(expires), .textArray(ids), .integerArray(runs),
                        .integer(preference.onlyAbsentInstances ? 1 : 0),
                    ])
            guard result.rowCount > 0 else { return nil }
            let claimed = try PublishQueueSQL.job(PGRow(result: result, row: 0))
            var job = ClaimedJob(
                id: claimed.id, job: claimed.job, cursor: claimed.cursor,
                counters: try PublishQueueSQL.counters(
                    ofAttempt: claimed.attempts, job: claimed.id.rawValue, on: connection),
                attempt: claimed.attempts,
                leaseExpiresAt: claimed.leaseExpiresAt ?? Date(millisecondsSince1970: expires),
                cancelRequested: claimed.cancelRequested)
            // A split job is claimable as a job only once its shards have all ended (the last one leased it to a
            // node that died before finishing it): the claimant just finishes it.
            if !result.isNull(0, 15) { job.shardsEnded = try Self.shardedEnd(connection, job: claimed.id.rawValue) }
            return job
        }
    }

    package func checkpoint(
        _ job: PublishJobID, workerID: String, cursor: Int64, counters: PublishCounters, deviceResults: [DeviceResult],
        answered: [Int64]
    ) async throws {
        try await writeAlone { connection in
            let id = PGValue.integer(job.rawValue)
            // The device rows first (in id order, `applyDeviceResults`), then this job's own rows, then the fence:
            // the job row is locked only from the fence to COMMIT, so a lease renewal never waits for this
            // transaction's other lock waits. A run that lost its lease fails the fence and none of it is kept.
            try Self.applyDeviceResults(deviceResults, connection: connection)
            // A row per range of consecutive refs (`AnsweredRanges`), sorted, as every writer of these keys inserts
            // them: two transactions never wait for each other's.
            try Self.remember(AnsweredRanges(answered, above: cursor), job: id, connection: connection)
            try PublishQueueSQL.forgetAnswered(job: job, through: cursor, on: connection)
            let changed = counters.storedNames.filter { $0.value != 0 }.sorted { $0.key < $1.key }
            if !changed.isEmpty {
                try connection.run(
                    """
                    INSERT INTO publish_counters (job_id, name, value)
                    SELECT $1, name, value FROM unnest($2::text[], $3::bigint[]) AS c(name, value)
                    ON CONFLICT (job_id, name) DO UPDATE SET value = publish_counters.value + excluded.value
                    """, [id, .textArray(changed.map(\.key)), .integerArray(changed.map(\.value))])
            }
            try PublishQueueSQL.fence(job, workerID: workerID, cursor: cursor, on: connection)
        }
    }

    /// Inserts a checkpoint's answered ranges of the job `job`. A range that starts where one written before starts
    /// (the same batch written again after a COMMIT whose answer was lost, now with more answers) keeps the larger
    /// end, so no answered ref is lost.
    static func remember(_ ranges: AnsweredRanges, job: PGValue, connection: PGConnection) throws {
        guard !ranges.isEmpty else { return }
        try connection.run(
            """
            INSERT INTO publish_answered (job_id, ref, last_ref)
            SELECT $1, a.ref, a.last_ref FROM unnest($2::bigint[], $3::bigint[]) AS a(ref, last_ref)
            ON CONFLICT (job_id, ref) DO UPDATE
            SET last_ref = greatest(coalesce(publish_answered.last_ref, publish_answered.ref), excluded.last_ref)
            """, [job, .integerArray(ranges.firsts), .integerArray(ranges.lasts)])
    }

    /// A split job's shard counters become job counters and its shards go (nothing for a job delivered whole).
    package static func finished(_ job: PublishJobID, connection: PGConnection) throws {
        let job = job.rawValue
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
}
