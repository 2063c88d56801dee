import Foundation
import PushStore

/// The jobs the ranked claim tells apart, for the migration tests of the step that indexes the open jobs by instance
/// (SQLite step 19, PostgreSQL step 18): two queued jobs of instance `busy` (`p1`, then `p2`) and one of `idle`
/// (`p3`). Queued before the step and claimed after it by a node that runs one of `busy`'s publishes, they must come
/// out as `p3` (the instance without runs) and then `p1` (`busy`'s oldest), as the contract suite has them without
/// a migration in between (`PublishQueueContract`).
package enum RankedClaimJobs {
    /// Queues the three jobs, all created at `createdAt`.
    package static func enqueue(on queue: some PublishQueue, createdAt: Date) async throws {
        for (publishID, instanceID) in [("p1", "busy"), ("p2", "busy"), ("p3", "idle")] {
            _ = try await queue.enqueuePublish(
                PublishJob(
                    instanceID: instanceID, publishID: publishID, kind: .interests, targets: ["news"],
                    payload: Data([0]), createdAt: createdAt))
        }
    }

    /// The publish ids of two claims at `now` (nil where nothing was claimable) by a node that runs one of `busy`'s
    /// publishes.
    package static func claimTwice(from queue: some PublishQueue, now: Date) async throws -> [String?] {
        let preference = ClaimPreference(runsByInstance: ["busy": 1])
        var publishIDs: [String?] = []
        for _ in 0..<2 {
            let claimed = try await queue.claimJob(
                workerID: "w", leaseDuration: .seconds(30), now: now, preference: preference)
            publishIDs.append(claimed?.job.publishID)
        }
        return publishIDs
    }
}
