import Foundation
import PushStore
import SQL
import StoreSQL

/// The publish queue on PostgreSQL: the statements are `PublishQueueSQL`'s but for the claim (`FOR UPDATE SKIP
/// LOCKED` in a `MATERIALIZED` CTE), the shards, the NOTIFYs, and a checkpoint's answered refs and counters (one
/// `unnest` insert each).
extension PostgreSQLPushStore {
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

    package func claimJob(workerID: String, leaseDuration: Duration, now: Date, preference: ClaimPreference)
        async throws
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
            guard result.rowCount > 0 else { return nil }
            let claimed = try PublishQueueSQL.job(PGRow(result: result, row: 0))
            var job = ClaimedJob(
                id: claimed.id, job: claimed.job, cursor: claimed.cursor,
                counters: try PublishQueueSQL.counters(job: claimed.id.rawValue, on: connection),
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
            // Sorted, as every writer of these keys inserts them: two transactions never wait for each other's.
            let remembered = answered.filter { $0 > cursor }.sorted()
            if !remembered.isEmpty {
                try connection.run(
                    """
                    INSERT INTO publish_answered (job_id, ref) SELECT $1, ref FROM unnest($2::bigint[]) AS a(ref)
                    ON CONFLICT DO NOTHING
                    """, [id, .integerArray(remembered)])
            }
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
