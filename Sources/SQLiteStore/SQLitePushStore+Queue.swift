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
        // Urgent, as a lease renewal: a claim is the engine's write, as its checkpoints are, and in the engine's FIFO
        // one instance's one-device publish waited behind another's fan-out checkpoints (500 results each) before
        // it could start (issue 25). One claim loop per node claims one job at a time, so this cannot crowd
        // anything out.
        return try await write(urgent: true) { connection in
            guard let id = try Self.claimChoice(now: nowMillis, preference: preference, on: connection) else {
                return nil
            }
            // The job is read by its key before the UPDATE (nothing changes it in between: this is the one writer's
            // transaction) rather than returned by it: SQLite buffers a RETURNING's rows in a temporary table it
            // builds per statement, ~30,000 instructions a claim (docs/BENCHMARKS.md "Intake's store calls per
            // job"). What the UPDATE changes of the columns read is known: the attempt and the lease's end.
            guard
                var claimed = try connection.first(
                    Self.claimedJobSQL, [.integer(id)], { try PublishQueueSQL.job(SQLiteRow(statement: $0)) })
            else { return nil }
            try connection.run(
                Self.claimUpdateSQL, [.integer(id), .text(workerID), .integer(expires), .integer(nowMillis)])
            claimed.attempts += 1
            return ClaimedJob(
                id: claimed.id, job: claimed.job, cursor: claimed.cursor,
                counters: try PublishQueueSQL.counters(ofAttempt: claimed.attempts, job: id, on: connection),
                attempt: claimed.attempts, leaseExpiresAt: Date(millisecondsSince1970: expires),
                cancelRequested: claimed.cancelRequested)
        }
    }

    /// The claimed job's row, by its key.
    static let claimedJobSQL = "SELECT \(PublishQueueSQL.jobColumns(.sqlite)) FROM publish_jobs WHERE id = ?1"

    /// The claim itself: the job running under the claimant's lease, its attempt counted.
    static let claimUpdateSQL = """
        UPDATE publish_jobs SET state = 'running', lease_owner = ?2, lease_expires_at = ?3,
            started_at = COALESCE(started_at, ?4), attempts = attempts + 1
        WHERE id = ?1
        """

    /// The claim's choice: a claimable job of the instance with the fewest runs on the claiming node, its oldest.
    /// `publish_jobs_open` holds only unfinished jobs, so this never scans finished history. With runs to rank by,
    /// the instances with open jobs are read one statement each by skipping along `publish_jobs_open_by_instance`
    /// (one seek each), with each one's oldest claimable job (one seek there), and the best of those candidates is
    /// kept here. Sorting every claimable job by its instance's runs cost a read of the whole backlog per claim, on
    /// the one writer: 13-23 ms per claim behind 33,000 queued publishes (0.04 ms now), and intake fell to a third
    /// (docs/BENCHMARKS.md "Publish intake"); one statement that listed and sorted the candidates itself (a
    /// recursive CTE, a materialised one and a sort: three temporary tables) cost ~75,000 instructions a claim
    /// more than these seeks (docs/BENCHMARKS.md "Intake's store calls per job").
    static func claimChoice(now: Int64, preference: ClaimPreference, on connection: SQLiteConnection) throws
        -> Int64?
    {
        guard !preference.runsByInstance.isEmpty else {
            return try connection.first(oldestClaimableSQL, [.integer(now)]) { $0.int64(0) }
        }
        var best: (rank: Int, id: Int64)?
        var after: String?
        while true {
            let sql = after == nil ? firstOpenInstanceSQL : nextOpenInstanceSQL
            let parameters: [SQLValue] = after.map { [.integer(now), .text($0)] } ?? [.integer(now)]
            guard
                let (instance, candidate) = try connection.first(
                    sql, parameters, { ($0.text(0), $0.optionalInt64(1)) })
            else { break }
            after = instance
            guard let candidate, preference.admits(instance) else { continue }
            let rank = preference.rank(of: instance)
            if let best, (best.rank, best.id) <= (rank, candidate) { continue }
            best = (rank, candidate)
        }
        return best?.id
    }

    /// Whether a job is claimable at `?1`: queued and due, or running under a lease that ran out.
    private static let claimable = """
        state IN ('queued', 'running')
            AND ((state = 'queued' AND (not_before IS NULL OR not_before <= ?1)) OR lease_expires_at <= ?1)
        """

    /// The oldest claimable job.
    static let oldestClaimableSQL =
        "SELECT id FROM publish_jobs INDEXED BY publish_jobs_open WHERE \(claimable) ORDER BY id LIMIT 1"

    /// The first instance with open jobs (by id) and its oldest claimable job (NULL: none is claimable now).
    static let firstOpenInstanceSQL = openInstanceSQL(after: false)

    /// The next instance with open jobs after `?2`, and its oldest claimable job.
    static let nextOpenInstanceSQL = openInstanceSQL(after: true)

    private static func openInstanceSQL(after: Bool) -> String {
        """
        SELECT o.instance_id, (SELECT id FROM publish_jobs INDEXED BY publish_jobs_open_by_instance
                WHERE instance_id = o.instance_id AND \(claimable) ORDER BY id LIMIT 1)
        FROM publish_jobs AS o INDEXED BY publish_jobs_open_by_instance
        WHERE o.state IN ('queued', 'running')\(after ? " AND o.instance_id > ?2" : "")
        ORDER BY o.instance_id LIMIT 1
        """
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
