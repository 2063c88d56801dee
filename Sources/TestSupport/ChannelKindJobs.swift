import Foundation
import PushStore

/// The jobs of the migration tests of the step that makes broadcasts a job kind of their own (SQLite step 18,
/// PostgreSQL step 17): a broadcast stored before the step (an `interests` job told apart only by its
/// `pubid-channels-` id), an interests publish, and a `channels` job that only the migrated store takes.
package struct ChannelKindJobs: Sendable {
    /// The kinds the migrated store reads back.
    package struct KindsAfter: Sendable, Equatable {
        /// The broadcast queued before the step (`channels` once relabelled).
        package var broadcastBefore: PublishKind?
        /// The interests publish queued before the step (still `interests`).
        package var interestsBefore: PublishKind?
        /// A `channels` job queued after the step.
        package var channelsAfter: PublishKind?
    }

    package let instanceID: String
    package let createdAt: Date

    package init(instanceID: String, createdAt: Date) {
        self.instanceID = instanceID
        self.createdAt = createdAt
    }

    /// On the store before the step: queues the broadcast and the interests publish, then tries a `channels` job.
    /// - Returns: whether the store refused the `channels` job.
    package func queueBeforeTheStep(on queue: some PublishQueue) async throws -> Bool {
        _ = try await queue.enqueuePublish(job("pubid-channels-before", .interests))
        _ = try await queue.enqueuePublish(job("pubid-interests-before", .interests))
        do {
            _ = try await queue.enqueuePublish(job("pubid-channels-refused", .channels))
            return false
        } catch {
            return true
        }
    }

    /// On the migrated store: queues a `channels` job and reads back the kind of each job.
    package func kindsAfterTheStep(on queue: some PublishQueue) async throws -> KindsAfter {
        _ = try await queue.enqueuePublish(job("pubid-channels-after", .channels))
        return KindsAfter(
            broadcastBefore: try await queue.publishStatus(instanceID: instanceID, publishID: "pubid-channels-before")?
                .kind,
            interestsBefore: try await queue.publishStatus(instanceID: instanceID, publishID: "pubid-interests-before")?
                .kind,
            channelsAfter: try await queue.publishStatus(instanceID: instanceID, publishID: "pubid-channels-after")?
                .kind)
    }

    private func job(_ publishID: String, _ kind: PublishKind) -> PublishJob {
        PublishJob(
            instanceID: instanceID, publishID: publishID, kind: kind, targets: kind == .interests ? ["news"] : [],
            payload: Data([0]), createdAt: createdAt)
    }
}
