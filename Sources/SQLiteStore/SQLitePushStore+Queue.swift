import Foundation
import JSON
import PushStore
import SQL

extension SQLitePushStore {
    static func encodeTargets(_ targets: [String]) throws -> String {
        JSONValue.array(targets.map(JSONValue.string)).jsonText
    }

    static func decodeTargets(_ text: String) throws -> [String] {
        let items = try JSONValue(parsing: text.utf8).arrayValue?.map(\.stringValue)
        guard let items, !items.contains(nil) else {
            throw JSONParseError(offset: 0, reason: "not an array of strings")
        }
        return items.compactMap { $0 }
    }

    static let jobColumns = """
        id, instance_id, publish_id, kind, targets, payload, webhook_url, created_at, cursor, attempts, \
        lease_expires_at, not_before, cancel_requested, trace_parent, trace_state
        """

    static func readJob(_ row: Statement) throws
        -> (id: PublishJobID, job: PublishJob, cursor: Int64, attempts: Int, lease: Date?, cancelRequested: Bool)
    {
        let job = PublishJob(
            instanceID: row.text(1), publishID: row.text(2), kind: PublishKind(rawValue: row.text(3)) ?? .interests,
            targets: try decodeTargets(row.text(4)), payload: row.blob(5), webhookURL: row.optionalText(6),
            createdAt: row.date(7), notBefore: row.optionalDate(11), traceParent: row.optionalText(13),
            traceState: row.optionalText(14))
        return (
            PublishJobID(rawValue: row.int64(0)), job, row.int64(8), Int(row.int64(9)), row.optionalDate(10),
            row.int64(12) != 0
        )
    }

    /// The stored state: `ended_as` (cancelled, expired) stands over `state`, which its CHECK keeps to the four
    /// original values (see `Schema.scheduledPublishes`).
    static func publishState(_ state: String, endedAs: String?) -> PublishState {
        if let endedAs, let ended = PublishState(rawValue: endedAs) { return ended }
        return PublishState(rawValue: state) ?? .queued
    }

    static func counters(_ connection: SQLiteConnection, job: Int64) throws -> PublishCounters {
        var rows: [String: Int64] = [:]
        try connection.query("SELECT name, value FROM publish_counters WHERE job_id = ?", [.integer(job)]) {
            rows[$0.text(0)] = $0.int64(1)
        }
        return PublishCounters(storedNames: rows)
    }

    /// Throws `leaseLost` unless `workerID` holds the running job's lease.
    static func requireLease(_ connection: SQLiteConnection, job: PublishJobID, workerID: String) throws {
        let held =
            try connection.first(
                "SELECT 1 FROM publish_jobs WHERE id = ? AND lease_owner = ? AND state = 'running'",
                [.integer(job.rawValue), .text(workerID)]
            ) { _ in true } ?? false
        if !held { throw PushStoreError.leaseLost(job) }
    }

    // MARK: Queue

    public func enqueuePublish(_ job: PublishJob) async throws -> PublishJobID {
        let targets = try Self.encodeTargets(job.targets)
        return try await write(tenant: job.instanceID) { connection in
            if let quota = job.dailyPublishQuota {
                try Self.countPublish(
                    connection, instanceID: job.instanceID, day: UTCDay(containing: job.createdAt),
                    quota: quota)
            }
            let inserted = try connection.run(
                """
                INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, webhook_url, created_at,
                    not_before, trace_parent, trace_state)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (instance_id, publish_id) DO NOTHING
                """,
                [
                    .text(job.instanceID), .text(job.publishID), .text(job.kind.rawValue), .text(targets),
                    .blob(job.payload), .text(job.webhookURL), .millis(job.createdAt),
                    .millis(job.notBefore), .text(job.traceParent), .text(job.traceState),
                ])
            if inserted == 0 { throw PushStoreError.duplicatePublish(publishID: job.publishID) }
            let id = PublishJobID(rawValue: connection.lastInsertRowID)
            // The Beams bridge's copy commits with the job: accepted means forwarded, even after a crash. A
            // scheduled publish's copy is due at its start moment.
            if let forward = job.beamsForward {
                _ = try Self.insertBeamsForward(connection, forward, now: job.createdAt, due: job.notBefore)
            }
            return id
        }
    }

    /// Counts one publish against the instance's `day`, or throws `publishQuotaReached` (changing nothing) when
    /// the day already holds `quota`. Runs inside the publish's write, so the count and the job commit together.
    static func countPublish(_ connection: SQLiteConnection, instanceID: String, day: UTCDay, quota: Int) throws {
        let counted = try connection.run(
            """
            INSERT INTO publish_day_counts (instance_id, day, publishes) VALUES (?, ?, 1)
            ON CONFLICT (instance_id, day) DO UPDATE SET publishes = publishes + 1 WHERE publishes < ?
            """, [.text(instanceID), .integer(day.number), .integer(Int64(quota))])
        // A quota of 0 refuses even the day's first publish.
        if counted == 0 || quota <= 0 { throw PushStoreError.publishQuotaReached }
        try connection.run(
            "DELETE FROM publish_day_counts WHERE instance_id = ? AND day < ?",
            [.text(instanceID), .integer(day.number - 1)])
    }

    public func claimJob(workerID: String, leaseDuration: Duration, now: Date, preference: ClaimPreference) async throws
        -> ClaimedJob?
    {
        let nowMillis = now.millisecondsSince1970
        let expires = now.millisecondsSince1970(after: leaseDuration)
        let (sql, parameters) = Self.claimQuery(now: nowMillis, preference: preference)
        return try await write { connection in
            guard let id = try connection.first(sql, parameters, { $0.int64(0) }) else { return nil }
            guard
                let claimed = try connection.first(
                    """
                    UPDATE publish_jobs SET state = 'running', lease_owner = ?, lease_expires_at = ?,
                        started_at = COALESCE(started_at, ?), attempts = attempts + 1
                    WHERE id = ? RETURNING \(Self.jobColumns)
                    """, [.text(workerID), .integer(expires), .integer(nowMillis), .integer(id)], Self.readJob)
            else { return nil }
            return ClaimedJob(
                id: claimed.id, job: claimed.job, cursor: claimed.cursor,
                counters: try Self.counters(connection, job: id), attempt: claimed.attempts,
                leaseExpiresAt: claimed.lease ?? Date(millisecondsSince1970: expires),
                cancelRequested: claimed.cancelRequested)
        }
    }

    /// The claim's choice: a claimable job of the instance with the fewest runs on the claiming node, its oldest.
    /// `publish_jobs_open` holds only unfinished jobs, so this never scans finished history; with runs to rank by,
    /// the open jobs that are claimable are sorted (a backlog of queued publishes, not the history).
    static func claimQuery(now: Int64, preference: ClaimPreference) -> (String, [SQLValue]) {
        var sql = """
            SELECT id FROM publish_jobs INDEXED BY publish_jobs_open
            WHERE state IN ('queued', 'running')
                AND ((state = 'queued' AND (not_before IS NULL OR not_before <= ?)) OR lease_expires_at <= ?)
            """
        var parameters: [SQLValue] = [.integer(now), .integer(now)]
        let (ids, runs) = preference.rankedInstances
        guard !ids.isEmpty else { return (sql + " ORDER BY id LIMIT 1", parameters) }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ", ")
        if preference.onlyAbsentInstances {
            sql += " AND instance_id NOT IN (\(placeholders))"
            parameters += ids.map { .text($0) }
        }
        sql += " ORDER BY CASE instance_id"
        for (id, count) in zip(ids, runs) {
            sql += " WHEN ? THEN ?"
            parameters += [.text(id), .integer(count)]
        }
        return (sql + " ELSE 0 END, id LIMIT 1", parameters)
    }

    @discardableResult
    public func renewLease(_ job: PublishJobID, workerID: String, leaseDuration: Duration, now: Date) async throws
        -> Bool
    {
        let expires = now.millisecondsSince1970(after: leaseDuration)
        return try await write(urgent: true) { connection in
            let changed = try connection.run(
                "UPDATE publish_jobs SET lease_expires_at = ? WHERE id = ? AND lease_owner = ? AND state = 'running'",
                [.integer(expires), .integer(job.rawValue), .text(workerID)])
            if changed == 0 { throw PushStoreError.leaseLost(job) }
            return try connection.first(
                "SELECT cancel_requested FROM publish_jobs WHERE id = ?", [.integer(job.rawValue)]
            ) { $0.int64(0) != 0 }
                ?? false
        }
    }

    public func checkpoint(
        _ job: PublishJobID, workerID: String, cursor: Int64, counters: PublishCounters, deviceResults: [DeviceResult],
        answered: [Int64]
    ) async throws {
        try await write(cost: 1 + deviceResults.count + answered.count) { connection in
            try Self.requireLease(connection, job: job, workerID: workerID)
            try connection.run(
                "UPDATE publish_jobs SET cursor = max(cursor, ?) WHERE id = ?",
                [.integer(cursor), .integer(job.rawValue)])
            for ref in answered where ref > cursor {
                try connection.run(
                    "INSERT OR IGNORE INTO publish_answered (job_id, ref) VALUES (?, ?)",
                    [.integer(job.rawValue), .integer(ref)])
            }
            try connection.run(
                "DELETE FROM publish_answered WHERE job_id = ? AND ref <= ?",
                [.integer(job.rawValue), .integer(cursor)])
            for (name, delta) in counters.storedNames where delta != 0 {
                try connection.run(
                    """
                    INSERT INTO publish_counters (job_id, name, value) VALUES (?, ?, ?)
                    ON CONFLICT (job_id, name) DO UPDATE SET value = value + excluded.value
                    """, [.integer(job.rawValue), .text(name), .integer(delta)])
            }
            try Self.applyDeviceResults(deviceResults, connection: connection)
        }
    }

    public func finishJob(
        _ job: PublishJobID, workerID: String, state: PublishState, targetsTotal: Int64?, summary: String?, now: Date
    ) async throws {
        precondition(state.isFinal, "finishJob needs a final state")
        // Cancelled and expired jobs are stored as finished with `ended_as` (see `Schema.scheduledPublishes`).
        let endedAs: SQLValue = state == .cancelled || state == .expired ? .text(state.rawValue) : .null
        let stored = state == .failed ? "failed" : "finished"
        try await write { connection in
            let changed = try connection.run(
                """
                UPDATE publish_jobs SET state = ?, ended_as = ?, finished_at = ?, targets_total = ?, summary = ?,
                    lease_owner = NULL, lease_expires_at = NULL
                WHERE id = ? AND lease_owner = ? AND state = 'running'
                """,
                [
                    .text(stored), endedAs, .millis(now), .integer(targetsTotal), .text(summary),
                    .integer(job.rawValue), .text(workerID),
                ])
            if changed == 0 { throw PushStoreError.leaseLost(job) }
            try connection.run("DELETE FROM publish_answered WHERE job_id = ?", [.integer(job.rawValue)])
        }
    }

    public func answeredTargets(_ job: PublishJobID) async throws -> Set<Int64> {
        try await read { connection in
            var refs = Set<Int64>()
            try connection.query("SELECT ref FROM publish_answered WHERE job_id = ?", [.integer(job.rawValue)]) {
                refs.insert($0.int64(0))
            }
            return refs
        }
    }

    static let statusColumns = """
        id, instance_id, publish_id, kind, state, targets_total, summary, attempts, created_at, started_at, finished_at, \
        ended_as, not_before, cancel_requested
        """

    static func readStatus(_ row: Statement, connection: SQLiteConnection) throws -> PublishStatus {
        let id = row.int64(0)
        let instanceID = row.text(1)
        let publishID = row.text(2)
        var eventCounts: [Int64: Int] = [:]
        try connection.query(
            "SELECT kind, count(*) FROM events WHERE instance_id = ? AND publish_id = ? GROUP BY kind",
            [.text(instanceID), .text(publishID)]
        ) { eventCounts[$0.int64(0)] = Int($0.int64(1)) }
        return PublishStatus(
            id: PublishJobID(rawValue: id), instanceID: instanceID, publishID: publishID,
            kind: PublishKind(rawValue: row.text(3)) ?? .interests,
            state: publishState(row.text(4), endedAs: row.optionalText(11)),
            counters: try counters(connection, job: id), targetsTotal: row.optionalInt64(5),
            summary: row.optionalText(6),
            attempts: Int(row.int64(7)), createdAt: row.date(8), startedAt: row.optionalDate(9),
            finishedAt: row.optionalDate(10),
            delivered: eventCounts[Int64(ReportingEvent.Kind.delivery.rawValue)] ?? 0,
            opened: eventCounts[Int64(ReportingEvent.Kind.open.rawValue)] ?? 0,
            notBefore: row.optionalDate(12), cancelRequested: row.int64(13) != 0)
    }

    public func publishStatus(instanceID: String, publishID: String) async throws -> PublishStatus? {
        try await read { connection in
            // Two statements are live at once here (the job row and its counters), so collect the row first.
            let id = try connection.first(
                "SELECT id FROM publish_jobs WHERE instance_id = ? AND publish_id = ?",
                [.text(instanceID), .text(publishID)]
            ) { $0.int64(0) }
            guard let id else { return nil }
            return try Self.status(connection, job: id)
        }
    }

    static func status(_ connection: SQLiteConnection, job: Int64) throws -> PublishStatus? {
        let statement = try connection.prepare("SELECT \(statusColumns) FROM publish_jobs WHERE id = ?")
        defer { statement.finalize() }
        try statement.bind([.integer(job)])
        guard try statement.step() else { return nil }
        return try readStatus(statement, connection: connection)
    }

    public func recentPublishes(instanceID: String, limit: Int) async throws -> [PublishStatus] {
        try await read { connection in
            var ids: [Int64] = []
            try connection.query(
                "SELECT id FROM publish_jobs WHERE instance_id = ? ORDER BY created_at DESC, id DESC LIMIT ?",
                [.text(instanceID), .integer(Int64(max(0, limit)))]
            ) { ids.append($0.int64(0)) }
            return try ids.compactMap { try Self.status(connection, job: $0) }
        }
    }

    public func queueDepth() async throws -> Int {
        try await read { connection in
            Int(
                try connection.first("SELECT count(*) FROM publish_jobs WHERE state IN ('queued', 'running')") {
                    $0.int64(0)
                } ?? 0)
        }
    }

    // MARK: Scheduling and cancelling

    public func nextPublishDue(now: Date) async throws -> Date? {
        try await read { connection in
            try connection.first(
                """
                SELECT min(not_before) FROM publish_jobs INDEXED BY publish_jobs_scheduled
                WHERE state = 'queued' AND not_before IS NOT NULL AND not_before > ?
                """, [.millis(now)]
            ) { $0.optionalDate(0) } ?? nil
        }
    }

    public func rescheduleJob(_ job: PublishJobID, workerID: String, notBefore: Date) async throws {
        try await write { connection in
            let changed = try connection.run(
                """
                UPDATE publish_jobs SET state = 'queued', not_before = ?, cursor = 0, lease_owner = NULL,
                    lease_expires_at = NULL
                WHERE id = ? AND lease_owner = ? AND state = 'running'
                """, [.millis(notBefore), .integer(job.rawValue), .text(workerID)])
            if changed == 0 { throw PushStoreError.leaseLost(job) }
            try connection.run("DELETE FROM publish_answered WHERE job_id = ?", [.integer(job.rawValue)])
        }
    }

    public func cancelPublish(instanceID: String, publishID: String, now: Date, audit: AuditEntry?) async throws
        -> PublishCancellation?
    {
        try await write { connection in
            guard
                let (id, state) = try connection.first(
                    "SELECT id, state FROM publish_jobs WHERE instance_id = ? AND publish_id = ?",
                    [.text(instanceID), .text(publishID)], { ($0.int64(0), $0.text(1)) })
            else { return nil }
            switch state {
            case "queued":
                try connection.run(
                    """
                    UPDATE publish_jobs SET state = 'finished', ended_as = 'cancelled', finished_at = ?,
                        lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ?
                    """, [.millis(now), .integer(id)])
                try connection.run("DELETE FROM publish_answered WHERE job_id = ?", [.integer(id)])
                try Self.append(audit, connection)
                return try Self.status(connection, job: id).map(PublishCancellation.cancelled)
            case "running":
                try connection.run("UPDATE publish_jobs SET cancel_requested = 1 WHERE id = ?", [.integer(id)])
                try Self.append(audit, connection)
                return .running(PublishJobID(rawValue: id))
            default:
                return try Self.status(connection, job: id).map(PublishCancellation.alreadyEnded)
            }
        }
    }
}
