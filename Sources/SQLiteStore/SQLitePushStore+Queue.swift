import Foundation
import PushStore
import SQL
import StoreSQL

/// The publish queue on SQLite: the statements are `PublishQueueSQL`'s but for the claim, which reads and hides a
/// due row under the one writer, and a checkpoint's rows, written one by one under it.
extension SQLitePushStore {
    /// Only the stored counters: SQLite has no shards, so they are the status's counters (a run's summary read
    /// the whole status, the counters' `GROUP BY` and two counts of delivery events, for them: ~0.15 M instructions
    /// a job, docs/BENCHMARKS.md "Publish intake").
    package func publishCounters(instanceID: String, publishID: String) async throws -> PublishCounters {
        try await read { connection in
            try PublishQueueSQL.counters(instanceID: instanceID, publishID: publishID, on: connection)
        }
    }

    /// `PublishQueueSQL.encodeTargets`, for the statements that hand SQLite a JSON array (`json_each`).
    static func encodeTargets(_ targets: [String]) throws -> String { PublishQueueSQL.encodeTargets(targets) }

    /// Nothing: a job's counters and state are all in its rows.
    package static func finished(_ job: PublishJobID, connection: SQLiteConnection) throws {}

    /// Nothing: no other node shares the database (the engine's own queue wakes this one).
    package static func announce(_ notice: QueueNotice, connection: SQLiteConnection) throws {}

    package func claimJob(workerID: String, leaseDuration: Duration, now: Date, preference: ClaimPreference)
        async throws
        -> ClaimedJob?
    {
        let nowMillis = now.millisecondsSince1970
        let expires = now.millisecondsSince1970(after: leaseDuration)
        let (sql, parameters) = Self.claimQuery(now: nowMillis, preference: preference)
        // Urgent, as a lease renewal: a claim is the engine's write, as its checkpoints are, and in the engine's FIFO
        // one instance's one-device publish waited behind another's fan-out checkpoints (500 results each) before
        // it could start (issue 25). One claim loop per node claims one job at a time, so this cannot crowd
        // anything out.
        return try await write(urgent: true) { connection in
            guard let id = try connection.first(sql, parameters, { $0.int64(0) }) else { return nil }
            guard
                let claimed = try connection.fetchOne(
                    """
                    UPDATE publish_jobs SET state = 'running', lease_owner = \(workerID), lease_expires_at = \(expires),
                        started_at = COALESCE(started_at, \(nowMillis)), attempts = attempts + 1
                    WHERE id = \(id) RETURNING \(raw: PublishQueueSQL.jobColumns(.sqlite))
                    """, PublishQueueSQL.job)
            else { return nil }
            return ClaimedJob(
                id: claimed.id, job: claimed.job, cursor: claimed.cursor,
                counters: try PublishQueueSQL.counters(job: id, on: connection), attempt: claimed.attempts,
                leaseExpiresAt: claimed.leaseExpiresAt ?? Date(millisecondsSince1970: expires),
                cancelRequested: claimed.cancelRequested)
        }
    }

    /// The claim's choice: a claimable job of the instance with the fewest runs on the claiming node, its oldest.
    /// `publish_jobs_open` holds only unfinished jobs, so this never scans finished history. With runs to rank by,
    /// the instances with open jobs are listed by skipping along `publish_jobs_open_by_instance` (one seek each) and
    /// each one's oldest claimable job read there; only those candidates are sorted. Sorting every claimable job by
    /// its instance's runs cost a read of the whole backlog per claim, on the one writer: 13-23 ms per claim behind
    /// 33,000 queued publishes (0.04 ms now), and intake fell to a third (docs/BENCHMARKS.md "Publish intake").
    static func claimQuery(now: Int64, preference: ClaimPreference) -> (String, [SQLValue]) {
        let claimable = """
            state IN ('queued', 'running')
                AND ((state = 'queued' AND (not_before IS NULL OR not_before <= ?)) OR lease_expires_at <= ?)
            """
        let (ids, runs) = preference.rankedInstances
        guard !ids.isEmpty else {
            let sql = "SELECT id FROM publish_jobs INDEXED BY publish_jobs_open WHERE \(claimable) ORDER BY id LIMIT 1"
            return (sql, [.integer(now), .integer(now)])
        }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ", ")
        var sql = """
            WITH RECURSIVE open_instances (instance) AS (
                SELECT (SELECT instance_id FROM publish_jobs INDEXED BY publish_jobs_open_by_instance
                    WHERE state IN ('queued', 'running') ORDER BY instance_id LIMIT 1)
                UNION ALL
                SELECT (SELECT instance_id FROM publish_jobs INDEXED BY publish_jobs_open_by_instance
                    WHERE state IN ('queued', 'running') AND instance_id > open_instances.instance
                    ORDER BY instance_id LIMIT 1)
                FROM open_instances WHERE instance IS NOT NULL
            ),
            candidates (id, instance) AS MATERIALIZED (
                SELECT (SELECT id FROM publish_jobs INDEXED BY publish_jobs_open_by_instance
                    WHERE instance_id = open_instances.instance AND \(claimable) ORDER BY id LIMIT 1), instance
                FROM open_instances WHERE instance IS NOT NULL
            )
            SELECT id FROM candidates WHERE id IS NOT NULL
            """
        var parameters: [SQLValue] = [.integer(now), .integer(now)]
        if preference.onlyAbsentInstances {
            sql += " AND instance NOT IN (\(placeholders))"
            parameters += ids.map { .text($0) }
        }
        sql += " ORDER BY CASE instance"
        for (id, count) in zip(ids, runs) {
            sql += " WHEN ? THEN ?"
            parameters += [.text(id), .integer(count)]
        }
        return (sql + " ELSE 0 END, id LIMIT 1", parameters)
    }

    package func checkpoint(
        _ job: PublishJobID, workerID: String, cursor: Int64, counters: PublishCounters, deviceResults: [DeviceResult],
        answered: [Int64]
    ) async throws {
        let ranges = AnsweredRanges(answered, above: cursor)
        try await write(cost: 1 + deviceResults.count + ranges.count) { connection in
            // The fence first: under the one writer nothing changes the job's row between it and the rest.
            try PublishQueueSQL.fence(job, workerID: workerID, cursor: cursor, on: connection)
            // One statement for the checkpoint's ranges above the cursor, one row per range of consecutive refs
            // (`AnsweredRanges`). A range that starts where one written before starts (the same batch written again
            // after a failed write, with more answers) keeps the larger end, so no answered ref is lost.
            if !ranges.isEmpty {
                // `WHERE true`: SQLite needs it to tell the upsert's ON CONFLICT from a join constraint.
                _ = try connection.run(
                    """
                    INSERT INTO publish_answered (job_id, ref, last_ref)
                    SELECT ?1, value ->> 0, value ->> 1 FROM json_each(?2) WHERE true
                    ON CONFLICT (job_id, ref) DO UPDATE
                    SET last_ref = max(coalesce(publish_answered.last_ref, publish_answered.ref), excluded.last_ref)
                    """, [.integer(job.rawValue), .text(ranges.jsonPairs)])
            }
            try PublishQueueSQL.forgetAnswered(job: job, through: cursor, on: connection)
            for (name, delta) in counters.storedNames where delta != 0 {
                try PublishQueueSQL.addCounter(name, delta, job: job, on: connection)
            }
            try Self.applyDeviceResults(deviceResults, connection: connection)
        }
    }

}
