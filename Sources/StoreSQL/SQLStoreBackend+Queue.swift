import Foundation
import PushStore

/// The publish queue's enqueue, cancel, reads, lease renewals and reschedules, the `targets(for:)` dispatch and a
/// delivery report's facts, written once: `PublishQueueSQL`'s and `DeliveryResultSQL`'s statements in the backend's
/// transactions (PostgreSQL's NOTIFYs through `announce`). The claim, the checkpoint, and the target pages stay per
/// backend.
extension SQLStoreBackend {
    package func enqueuePublish(_ job: PublishJob) async throws -> PublishJobID {
        try await write(StoreWrite(tenant: job.instanceID)) { connection in
            if let quota = job.dailyPublishQuota {
                try PublishQueueSQL.countPublish(
                    instanceID: job.instanceID, day: UTCDay(containing: job.createdAt), quota: quota, on: connection)
            }
            let id = try PublishQueueSQL.enqueue(job, schema: Self.publishSchema, on: connection)
            // The Beams bridge's copy commits with the job: accepted means forwarded, even after a crash. A
            // scheduled publish's copy is due at its start moment.
            if let forward = job.beamsForward {
                _ = try BeamsForwardSQL.insert(forward, now: job.createdAt, due: job.notBefore, on: connection)
            }
            // Idle nodes wake for it (delivered on COMMIT); a scheduled one is found by their timers and polls.
            if job.notBefore == nil { try Self.announce(.work, connection: connection) }
            return id
        }
    }

    package func finishJob(
        _ job: PublishJobID, workerID: String, state: PublishState, targetsTotal: Int64?, summary: String?, now: Date
    ) async throws {
        precondition(state.isFinal, "finishJob needs a final state")
        try await write(StoreWrite()) { connection in
            try PublishQueueSQL.finish(
                job, workerID: workerID, state: state, targetsTotal: targetsTotal, summary: summary, now: now,
                schema: Self.publishSchema, on: connection)
            try Self.finished(job, connection: connection)
        }
    }

    package func cancelPublish(instanceID: String, publishID: String, now: Date, audit: AuditEntry?) async throws
        -> PublishCancellation?
    {
        try await write(StoreWrite()) { connection in
            try PublishQueueSQL.cancel(
                instanceID: instanceID, publishID: publishID, now: now, audit: audit, schema: Self.publishSchema,
                on: connection
            ) { id in
                // Every node running a part of it (a shard) stops at once instead of at its next lease renewal.
                try Self.announce(.cancelled(PublishJobID(rawValue: id)), connection: connection)
            }
        }
    }

    @discardableResult
    package func renewLease(_ job: PublishJobID, workerID: String, leaseDuration: Duration, now: Date) async throws
        -> Bool
    {
        let expires = now.millisecondsSince1970(after: leaseDuration)
        return try await write(StoreWrite(.lease)) { connection in
            // `lease_expires_at` is in no index: on PostgreSQL the renewal is a HOT update. `cancel_requested`
            // tells the holder of a cancel made through another node.
            try PublishQueueSQL.renewLease(job, workerID: workerID, expires: expires, on: connection)
        }
    }

    package func answeredTargets(_ job: PublishJobID) async throws -> Set<Int64> {
        try await read { connection in try PublishQueueSQL.answered(job: job, on: connection) }
    }

    package func publishStatus(instanceID: String, publishID: String) async throws -> PublishStatus? {
        try await read { connection in
            try PublishQueueSQL.status(
                instanceID: instanceID, publishID: publishID, schema: Self.publishSchema, on: connection)
        }
    }

    package func recentPublishes(instanceID: String, limit: Int) async throws -> [PublishStatus] {
        try await read { connection in
            try PublishQueueSQL.recent(instanceID: instanceID, limit: limit, schema: Self.publishSchema, on: connection)
        }
    }

    package func queueDepth() async throws -> Int {
        try await read { connection in try PublishQueueSQL.depth(on: connection) }
    }

    package func nextPublishDue(now: Date) async throws -> Date? {
        try await read { connection in
            try PublishQueueSQL.nextDue(now: now, schema: Self.publishSchema, on: connection)
        }
    }

    package func rescheduleJob(_ job: PublishJobID, workerID: String, notBefore: Date) async throws {
        try await write(StoreWrite()) { connection in
            try PublishQueueSQL.reschedule(job, workerID: workerID, notBefore: notBefore, on: connection)
        }
    }

    /// A page of the job's targets by its kind, each kind's page the backend's (`SQLStoreBackend`).
    package func targets(for job: PublishJob, after cursor: Int64, limit: Int) async throws -> TargetPage {
        // One row more than the page may be read to learn whether another page follows.
        let limit = min(max(1, limit), Int.max - 1)
        return try await read { connection in
            switch job.kind {
            case .interests:
                return try Self.interestTargets(
                    connection, instanceID: job.instanceID, interests: job.targets, after: cursor, limit: limit)
            case .users:
                return try Self.userTargets(
                    connection, instanceID: job.instanceID, users: job.targets, after: cursor, limit: limit)
            case .channels:
                return TargetPage(targets: [], cursor: cursor, isLast: true)
            }
        }
    }

    package func reportFacts(instanceID: String, deviceID: String, publishID: String) async throws -> ReportFacts {
        try await read { connection in
            try DeliveryResultSQL.reportFacts(
                instanceID: instanceID, deviceID: deviceID, publishID: publishID, on: connection
            ) { userID, ref in Self.publishTargets(userID: userID, ref: ref, instanceID: instanceID) }
        }
    }
}
