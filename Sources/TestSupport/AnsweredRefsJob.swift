import Foundation
import PushStore

/// A publish in flight across the step that stores answered refs as ranges (SQLite step 20, PostgreSQL step 19), for
/// both backends' migration tests: claimed before the step, its progress written as the release before wrote it (the
/// cursor at 4 and one `publish_answered` row per ref, by `oldProgressSQL`, which both backends take as it is), then
/// read and checkpointed after the step. The answered set must read the same as before the step and go on to
/// combine with the ranges written after it.
package struct AnsweredRefsJob {
    /// The cursor the release before had written.
    package static let cursor: Int64 = 4
    /// The refs it had remembered above the cursor, one row each.
    package static let oldRefs: [Int64] = [5, 6, 7, 9, 12]

    /// What `afterTheStep` read.
    package struct Reads: Equatable {
        /// The cursor the resumed claim of this publish started at (nil: another or no publish was claimed).
        package var resumedAt: Int64?
        /// The answered set right after the step.
        package var migrated: Set<Int64>
        /// After a checkpoint at cursor 6 answering 8, 10 and 11 (written as a range).
        package var combined: Set<Int64>
        /// After a checkpoint at cursor 12: every old row and range covered.
        package var covered: Set<Int64>
    }

    package let id: PublishJobID

    /// Queues and claims the publish (worker `w`, a 30 s lease from `now`), on a store before the step.
    package static func claim(on queue: some PublishQueue, instanceID: String, now: Date) async throws -> Self {
        let id = try await queue.enqueuePublish(
            PublishJob(
                instanceID: instanceID, publishID: "in-flight", kind: .interests, targets: ["news"],
                payload: Data([0]), createdAt: now))
        _ = try await queue.claimJob(workerID: "w", leaseDuration: .seconds(30), now: now)
        return Self(id: id)
    }

    /// The release before's checkpoint of the cursor and the old refs, in SQL both backends run as it is.
    package var oldProgressSQL: String {
        let rows = Self.oldRefs.map { "(\(id.rawValue), \($0))" }.joined(separator: ", ")
        return """
            UPDATE publish_jobs SET cursor = \(Self.cursor) WHERE id = \(id.rawValue);
            INSERT INTO publish_answered (job_id, ref) VALUES \(rows);
            """
    }

    /// The reads after the step: the publish resumed by worker `w2` once the lease claimed at `claimedAt` expired
    /// (as after the old node died), then each checkpoint `Reads` names.
    package func afterTheStep(on queue: some PublishQueue, claimedAt: Date) async throws -> Reads {
        let resumed = try await queue.claimJob(
            workerID: "w2", leaseDuration: .seconds(30), now: claimedAt.addingTimeInterval(31))
        let migrated = try await queue.answeredTargets(id)
        try await queue.checkpoint(
            id, workerID: "w2", cursor: 6, counters: [:], deviceResults: [], answered: [8, 10, 11, 5])
        let combined = try await queue.answeredTargets(id)
        try await queue.checkpoint(id, workerID: "w2", cursor: 12, counters: [:], deviceResults: [], answered: [])
        return Reads(
            resumedAt: resumed?.id == id ? resumed?.cursor : nil, migrated: migrated, combined: combined,
            covered: try await queue.answeredTargets(id))
    }

    /// What `afterTheStep` must read: resumed at the old cursor, the old refs above it, then those above 6 with 8,
    /// 10 and 11, then none.
    package static let expected = Reads(
        resumedAt: cursor, migrated: [5, 6, 7, 9, 12], combined: [7, 8, 9, 10, 11, 12], covered: [])
}
