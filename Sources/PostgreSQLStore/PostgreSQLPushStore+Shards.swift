import Foundation
import PushStore
import SQL
import StoreSQL

/// Shards of a large publish (`ShardedPublishQueue`): ranges of device refs that every node claims with
/// `FOR UPDATE SKIP LOCKED`, each with its own lease, fencing epoch, cursor and absolute counters.
extension PostgreSQLPushStore: ShardedPublishQueue {
    /// The channel of LISTEN/NOTIFY wake-ups (`QueueNotice`).
    static let noticeChannel = "push_server_queue"
    /// Shards one publish is split into at most; past it the last shard takes the rest (a 10M-device publish at the
    /// smallest `shardSize`, 1,000, needs 10,000).
    static let maxShards = 10_000

    /// Locks the shard's row for this transaction; throws `leaseLost` unless `workerID` holds it at `shard.epoch`.
    static func requireShardLease(
        _ connection: PGConnection, job: PublishJobID, shard: PublishShard, workerID: String
    ) throws {
        let held =
            try connection.query(
                """
                SELECT 1 FROM publish_shards
                WHERE job_id = $1 AND shard_no = $2 AND lease_owner = $3 AND epoch = $4 AND state = 'running' FOR UPDATE
                """, [.integer(job.rawValue), .integer(Int64(shard.number)), .text(workerID), .integer(shard.epoch)]
            )
            .rowCount > 0
        if !held { throw PushStoreError.leaseLost(job) }
    }

    package func splitPublish(
        _ job: PublishJobID, workerID: String, shardSize: Int, targetsCounter: PublishCounters.Counter?, now: Date
    ) async throws -> Int {
        let step = Int64(max(1, shardSize))
        return try await write { connection in
            let found = try connection.query(
                """
                SELECT kind, cursor, shards IS NOT NULL, instance_id, array_to_json(targets)::text FROM publish_jobs
                WHERE id = $1 AND lease_owner = $2 AND state = 'running' FOR UPDATE
                """, [.integer(job.rawValue), .text(workerID)])
            guard found.rowCount > 0 else { throw PushStoreError.leaseLost(job) }
            // Only a fresh interests publish: a users publish is at most 1,000 users' devices, and a job that made
            // progress keeps its cursor and counters.
            guard found.text(0, 0) == PublishKind.interests.rawValue, found.int64(0, 1) == 0, !found.bool(0, 2) else {
                return 0
            }
            let names = try PublishQueueSQL.decodeTargets(found.text(0, 4))
            // The largest interest sets the boundaries: every `step`-th of its followers. The shards cover every ref
            // (the first starts at 0, the last has no end), so followers of the other interests fall in one each.
            // Counting stops at 8 shards' worth per interest (a publish names up to 100 interests): any interest that
            // large guides well enough, and the count stays bounded.
            let countCap = step.multipliedReportingOverflow(by: 8).overflow ? Int64.max : step * 8
            let largest = try connection.query(
                """
                SELECT i.id FROM interests i WHERE i.instance_id = $1 AND i.name = ANY($2::text[])
                ORDER BY (SELECT count(*) FROM (SELECT 1 FROM device_interests f WHERE f.interest_id = i.id LIMIT $3)
                    AS capped) DESC, i.id LIMIT 1
                """,
                [
                    .text(found.text(0, 3)), .textArray(Array(Set(names))),
                    .integer(countCap),
                ])
            guard let interest = largest.first({ largest.int64($0, 0) }) else { return 0 }
            var bounds: [Int64] = []
            var after: Int64 = 0
            while bounds.count < Self.maxShards - 1 {
                let next = try connection.query(
                    """
                    SELECT device_id FROM device_interests WHERE interest_id = $1 AND device_id > $2
                    ORDER BY interest_id, device_id OFFSET $3 LIMIT 1
                    """, [.integer(interest), .integer(after), .integer(step - 1)])
                guard let bound = next.first({ next.int64($0, 0) }) else { break }
                bounds.append(bound)
                after = bound
            }
            guard !bounds.isEmpty else { return 0 }
            let afters: [Int64?] = [0] + bounds
            let throughs: [Int64?] = bounds + [nil]
            try connection.run(
                """
                INSERT INTO publish_shards (job_id, shard_no, after_ref, through_ref, cursor, counter_names, counter_values)
                SELECT $1, s.no - 1, s.after_ref, s.through_ref, s.after_ref, $4::text[], $5::bigint[]
                FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS s(after_ref, through_ref, no)
                """,
                [
                    .integer(job.rawValue), .integerArray(afters), .integerArray(throughs),
                    .textArray(targetsCounter.map { [$0.storedName] } ?? []),
                    .integerArray(targetsCounter == nil ? [] : [step]),
                ])
            // Released: from now on the job is delivered through its shards; the last one to end leases it again.
            try connection.run(
                "UPDATE publish_jobs SET shards = $1, lease_owner = NULL, lease_expires_at = NULL WHERE id = $2",
                [.integer(Int64(afters.count)), .integer(job.rawValue)])
            try Self.notify(connection, "work")
            return afters.count
        }
    }

    /// Queues a `QueueNotice` for the listening nodes; PostgreSQL delivers it when (and only if) the transaction
    /// commits.
    package static func announce(_ notice: QueueNotice, connection: PGConnection) throws {
        switch notice {
        case .work: try notify(connection, "work")
        case .cancelled(let job): try notify(connection, "cancel:\(job.rawValue)")
        }
    }

    /// Sends `payload` on `noticeChannel` when the transaction commits.
    static func notify(_ connection: PGConnection, _ payload: String) throws {
        try connection.query("SELECT pg_notify($1, $2)", [.text(noticeChannel), .text(payload)])
    }

    /// The claim: the oldest publish's first claimable shard, skipping shards locked by other claimers.
    static let claimShardSQL = """
        WITH next AS MATERIALIZED (
            SELECT job_id, shard_no FROM publish_shards
            WHERE state IN ('queued', 'running') AND (state = 'queued' OR lease_expires_at <= $1)
            ORDER BY job_id, shard_no LIMIT 1 FOR UPDATE SKIP LOCKED
        )
        UPDATE publish_shards s SET state = 'running', lease_owner = $2, lease_expires_at = $3, epoch = s.epoch + 1,
            attempts = s.attempts + 1
        FROM next WHERE s.job_id = next.job_id AND s.shard_no = next.shard_no
        RETURNING s.job_id, s.shard_no, s.after_ref, s.through_ref, s.epoch, s.cursor, s.attempts
        """

    package func claimShard(workerID: String, leaseDuration: Duration, now: Date) async throws -> ClaimedJob? {
        let nowMillis = now.millisecondsSince1970
        let expires = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            let claimed = try connection.query(
                Self.claimShardSQL, [.integer(nowMillis), .text(workerID), .integer(expires)])
            guard claimed.rowCount > 0 else { return nil }
            let jobID = claimed.int64(0, 0)
            let shard = PublishShard(
                number: Int(clamping: claimed.int64(0, 1)), after: claimed.int64(0, 2),
                through: claimed.optionalInt64(0, 3), epoch: claimed.int64(0, 4))
            guard
                let job = try connection.fetchOne(
                    "SELECT \(raw: PublishQueueSQL.jobColumns(.postgresql)) FROM publish_jobs WHERE id = \(jobID)",
                    PublishQueueSQL.job)
            else { return nil }
            var result = ClaimedJob(
                id: job.id, job: job.job, cursor: claimed.int64(0, 5),
                counters: try Self.shardCounters(connection, job: jobID, shard: shard.number),
                attempt: Int(clamping: claimed.int64(0, 6)), leaseExpiresAt: Date(millisecondsSince1970: expires),
                cancelRequested: job.cancelRequested)
            result.shard = shard
            return result
        }
    }

    static func shardCounters(_ connection: PGConnection, job: Int64, shard: Int) throws -> PublishCounters {
        let result = try connection.query(
            """
            SELECT c.name, c.value FROM publish_shards s, unnest(s.counter_names, s.counter_values) AS c(name, value)
            WHERE s.job_id = $1 AND s.shard_no = $2
            """, [.integer(job), .integer(Int64(shard))])
        var counters: [String: Int64] = [:]
        for row in 0..<result.rowCount { counters[result.text(row, 0)] = result.int64(row, 1) }
        return PublishCounters(storedNames: counters)
    }

    @discardableResult
    package func renewShardLease(
        _ job: PublishJobID, shard: PublishShard, workerID: String, leaseDuration: Duration, now: Date
    ) async throws -> Bool {
        let expires = now.millisecondsSince1970(after: leaseDuration)
        return try await writeLease { connection in
            let result = try connection.query(
                """
                UPDATE publish_shards s SET lease_expires_at = $1 FROM publish_jobs j
                WHERE s.job_id = $2 AND s.shard_no = $3 AND s.lease_owner = $4 AND s.epoch = $5 AND s.state = 'running'
                    AND j.id = s.job_id
                RETURNING j.cancel_requested
                """,
                [
                    .integer(expires), .integer(job.rawValue), .integer(Int64(shard.number)), .text(workerID),
                    .integer(shard.epoch),
                ])
            guard let cancelRequested = result.first({ result.bool($0, 0) }) else {
                throw PushStoreError.leaseLost(job)
            }
            return cancelRequested
        }
    }

    package func targets(for job: PublishJob, shard: PublishShard, after cursor: Int64, limit: Int) async throws
        -> TargetPage
    {
        let limit = min(max(1, limit), Int.max - 1)
        let through = shard.through ?? .max
        return try await read { connection in
            guard cursor < through else { return TargetPage(targets: [], cursor: cursor, isLast: true) }
            return try Self.interestTargets(
                connection, instanceID: job.instanceID, interests: job.targets,
                after: cursor, through: through, limit: limit)
        }
    }

    package func targetCount(for job: PublishJob, shard: PublishShard) async throws -> Int64 {
        try await read { connection in
            // The shard's page query without its pages: the union of the interests' followers in the shard's range.
            let counted = try connection.query(
                """
                SELECT count(*) FROM (
                    SELECT DISTINCT di.device_id FROM device_interests di JOIN interests i ON i.id = di.interest_id
                    WHERE i.instance_id = $1 AND i.name = ANY($2::text[]) AND di.device_id > $3 AND di.device_id <= $4
                ) AS f JOIN devices d ON d.id = f.device_id WHERE d.invalidated_at IS NULL
                """,
                [
                    .text(job.instanceID), .textArray(Array(Set(job.targets))), .integer(shard.after),
                    .integer(shard.through ?? .max),
                ])
            return counted.int64(0, 0)
        }
    }

    package func checkpointShard(
        _ job: PublishJobID, shard: PublishShard, workerID: String, cursor: Int64, totals: PublishCounters,
        deviceResults: [DeviceResult], answered: [Int64]
    ) async throws {
        try await writeAlone { connection in
            let id = PGValue.integer(job.rawValue)
            // As a whole job's checkpoint: devices (in id order), the shard's answered refs, then the fence, so the
            // shard row is locked only from the fence to COMMIT and its lease renewal never waits longer.
            try Self.applyShardResults(deviceResults, connection: connection)
            // Only the shard's own refs (above its first `after`, at most its `through`), so no range reaches into
            // the next shard: the shards' reads and deletes below go by ranges' first refs.
            try Self.remember(
                AnsweredRanges(answered, above: max(cursor, shard.after), through: shard.through ?? .max), job: id,
                connection: connection)
            // The shard's ranges the cursor has passed; one it stands inside stays until the cursor passes its end.
            try connection.run(
                """
                DELETE FROM publish_answered
                WHERE job_id = $1 AND ref > $2 AND ref <= $3 AND coalesce(last_ref, ref) <= $3
                """, [id, .integer(shard.after), .integer(cursor)])
            let rows = totals.storedNames
            let names = rows.keys.sorted()
            // Fenced: the UPDATE re-reads the row it locks, so a claim that raised the epoch meanwhile is seen.
            let held = try connection.run(
                """
                UPDATE publish_shards SET cursor = greatest(cursor, $3), counter_names = $4::text[],
                    counter_values = $5::bigint[]
                WHERE job_id = $1 AND shard_no = $2 AND lease_owner = $6 AND epoch = $7 AND state = 'running'
                """,
                [
                    id, .integer(Int64(shard.number)), .integer(cursor), .textArray(names),
                    .integerArray(names.map { rows[$0] }), .text(workerID), .integer(shard.epoch),
                ])
            if held == 0 { throw PushStoreError.leaseLost(job) }
        }
    }

    /// A row per failure, none per success: a success changes a device only when it shows a failure (which the
    /// success now contradicts), so a 10M-device publish writes the devices that failed, not 10M rows. The check
    /// reads each success's device by its key; the rows it skips are neither written nor made dead.
    static func applyShardResults(_ results: [DeviceResult], connection: PGConnection) throws {
        let isSuccess = { (result: DeviceResult) in (200...299).contains(result.status) && result.effect == .none }
        let failures = results.filter { !isSuccess($0) }
        let successes = results.filter(isSuccess)
        // Every row this changes, locked at once in id order (see `lockDevices`): the failures' devices and the
        // successes' devices with a failure on record; a success of a healthy device locks nothing.
        if !results.isEmpty {
            try connection.query(
                """
                SELECT 1 FROM devices WHERE id = ANY($1::bigint[]) AND (id = ANY($2::bigint[])
                    OR (last_status IS NOT NULL AND (last_status < 200 OR last_status > 299)))
                ORDER BY id FOR NO KEY UPDATE
                """, [.integerArray(successes.map(\.device)), .integerArray(failures.map(\.device))])
        }
        try applyDeviceResults(failures, connection: connection, locked: true)
        guard !successes.isEmpty else { return }
        try connection.run(
            """
            UPDATE devices d SET last_status = r.status, last_reason = r.reason, last_result_at = r.at
            FROM unnest($1::bigint[], $2::integer[], $3::text[], $4::bigint[]) AS r(id, status, reason, at)
            WHERE d.id = r.id AND d.last_status IS NOT NULL AND (d.last_status < 200 OR d.last_status > 299)
                AND (d.last_result_at IS NULL OR d.last_result_at <= r.at)
            """,
            [
                .integerArray(successes.map(\.device)),
                .integerArray(successes.map { Int64(Int32(clamping: $0.status)) }), .textArray(successes.map(\.reason)),
                .integerArray(successes.map { $0.at.millisecondsSince1970 }),
            ])
    }

    package func answeredTargets(_ job: PublishJobID, shard: PublishShard) async throws -> Set<Int64> {
        try await read { connection in
            // The ranges that reach above the shard's cursor and start within it, expanded and clipped to the
            // refs above the cursor and at most its last (`AnsweredRanges.insert`).
            let result = try connection.query(
                """
                SELECT a.ref, coalesce(a.last_ref, a.ref), s.cursor, coalesce(s.through_ref, $3)
                FROM publish_answered a JOIN publish_shards s ON s.job_id = a.job_id AND s.shard_no = $2
                WHERE a.job_id = $1 AND a.ref > s.after_ref AND coalesce(a.last_ref, a.ref) > s.cursor
                    AND (s.through_ref IS NULL OR a.ref <= s.through_ref)
                """, [.integer(job.rawValue), .integer(Int64(shard.number)), .integer(.max)])
            var refs = Set<Int64>()
            for row in 0..<result.rowCount {
                AnsweredRanges.insert(
                    first: result.int64(row, 0), last: result.int64(row, 1), above: result.int64(row, 2),
                    through: result.int64(row, 3), into: &refs)
            }
            return refs
        }
    }

    package func finishShard(
        _ job: PublishJobID, shard: PublishShard, workerID: String, state: PublishState, targetsTotal: Int64,
        leaseDuration: Duration, now: Date
    ) async throws -> ShardedPublishEnd? {
        precondition(state.isFinal, "finishShard needs a final state")
        let expires = now.millisecondsSince1970(after: leaseDuration)
        return try await write { connection in
            try Self.requireShardLease(connection, job: job, shard: shard, workerID: workerID)
            let id = PGValue.integer(job.rawValue)
            try connection.run(
                """
                UPDATE publish_shards SET state = $3, targets_total = $4, lease_owner = NULL, lease_expires_at = NULL
                WHERE job_id = $1 AND shard_no = $2
                """, [id, .integer(Int64(shard.number)), .text(state.rawValue), .integer(targetsTotal)])
            try connection.run(
                "DELETE FROM publish_answered WHERE job_id = $1 AND ref > $2 AND ref <= $3",
                [id, .integer(shard.after), .integer(shard.through ?? .max)])
            // The job's row lock orders the shards' ends: of two last shards ending at once on two nodes, the second
            // waits here and then sees the first as ended, so exactly one of them finds nothing open.
            try connection.query("SELECT 1 FROM publish_jobs WHERE id = $1 FOR UPDATE", [id])
            let open = try connection.query(
                "SELECT count(*) FROM publish_shards WHERE job_id = $1 AND state IN ('queued', 'running')", [id])
            guard open.int64(0, 0) == 0 else { return nil }
            try connection.run(
                "UPDATE publish_jobs SET lease_owner = $1, lease_expires_at = $2 WHERE id = $3",
                [.text(workerID), .integer(expires), id])
            return try Self.shardedEnd(connection, job: job.rawValue)
        }
    }

    /// How a split publish ended, from its shards (all ended).
    static func shardedEnd(_ connection: PGConnection, job: Int64) throws -> ShardedPublishEnd {
        let result = try connection.query(
            """
            SELECT j.cancel_requested OR coalesce(bool_or(s.state = 'cancelled'), false),
                   coalesce(bool_or(s.state = 'expired'), false), coalesce(bool_or(s.state = 'failed'), false),
                   coalesce(sum(s.targets_total), 0)::bigint
            FROM publish_jobs j LEFT JOIN publish_shards s ON s.job_id = j.id
            WHERE j.id = $1 GROUP BY j.cancel_requested
            """, [.integer(job)])
        guard result.rowCount > 0 else { return ShardedPublishEnd(state: .failed, targetsTotal: 0) }
        let state: PublishState =
            result.bool(0, 0)
            ? .cancelled
            : result.bool(0, 1)
                ? .expired
                : result.bool(0, 2) ? .failed : .finished
        return ShardedPublishEnd(state: state, targetsTotal: result.int64(0, 3))
    }

    package func heartbeat(nodeID: String, version: String, now: Date, liveWithin: Duration) async throws -> Int {
        let nowMillis = now.millisecondsSince1970
        let since = Self.liveSince(nowMillis, liveWithin)
        return try await write { connection in
            try connection.run(
                """
                INSERT INTO nodes (node_id, version, started_at, last_seen) VALUES ($1, $2, $3, $3)
                ON CONFLICT (node_id) DO UPDATE SET version = excluded.version, last_seen = excluded.last_seen
                """, [.text(nodeID), .text(version), .integer(nowMillis)])
            // Nodes gone for a day are forgotten, so the table stays as small as the fleet.
            try connection.run("DELETE FROM nodes WHERE last_seen < $1", [.integer(nowMillis - 86_400_000)])
            return Int(
                try connection.query("SELECT count(*) FROM nodes WHERE last_seen >= $1", [.integer(since)])
                    .int64(0, 0))
        }
    }

    package func liveNodes(now: Date, liveWithin: Duration, limit: Int) async throws -> [NodeRecord] {
        let since = Self.liveSince(now.millisecondsSince1970, liveWithin)
        return try await read { connection in
            let result = try connection.query(
                """
                SELECT node_id, version, started_at, last_seen FROM nodes WHERE last_seen >= $1
                ORDER BY last_seen DESC, node_id LIMIT $2
                """, [.integer(since), .integer(Int64(max(0, limit)))])
            return (0..<result.rowCount).map { row in
                NodeRecord(
                    nodeID: result.text(row, 0), version: result.text(row, 1),
                    startedAt: result.date(row, 2), lastSeen: result.date(row, 3))
            }
        }
    }

    /// The oldest heartbeat (in milliseconds) that still counts as live; `liveWithin` is clamped to a day, the
    /// age at which `heartbeat` forgets a node.
    private static func liveSince(_ nowMillis: Int64, _ liveWithin: Duration) -> Int64 {
        nowMillis - min(max(0, liveWithin.components.seconds), 86_400) * 1000
    }

    package func leave(nodeID: String) async throws {
        try await write { connection in
            _ = try connection.run("DELETE FROM nodes WHERE node_id = $1", [.text(nodeID)])
        }
    }
}
