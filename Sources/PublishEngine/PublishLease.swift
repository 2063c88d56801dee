import Clocks
import Foundation
import PushStore

/// What a claim holds a lease on, handed back by the claim itself (`claimNext`): the run's store calls go through
/// it (`RunStore`), so no part of a run asks the store which capabilities it has.
enum PublishLease: Sendable {
    /// A whole job. `splitter`: the backend's shard calls, when it can split a large publish into shards.
    case job(splitter: (any ShardedPublishQueue)?)
    /// One shard of a split publish, with the backend that handed it out.
    case shard(PublishShard, any ShardedPublishQueue)

    /// The shard this lease covers, nil for a whole job.
    var shard: PublishShard? {
        if case .shard(let shard, _) = self { return shard }
        return nil
    }

    /// A claimed job or shard with the lease it holds.
    struct Claim: Sendable {
        let claimed: ClaimedJob
        let lease: PublishLease
        /// When the claim that won it was sent, on the monotonic clock: the lease counts from then (`LeaseClock`).
        let sentAt: UInt64
    }

    /// Claims the next publish for `workerID`: a whole job first (a new publish starts, or is split, at once), else,
    /// when `shardsToo` and the backend splits publishes (`PublishQueue.sharding`), a shard of a split one.
    /// - Returns: the claim and its lease, nil when nothing is claimable.
    static func claimNext(
        from store: any PublishQueue, workerID: String, leaseDuration: Duration, preference: ClaimPreference,
        shardsToo: Bool
    ) async throws -> Claim? {
        let splitter = store.sharding
        var sentAt = MonotonicClock.now()
        if let job = try await store.claimJob(
            workerID: workerID, leaseDuration: leaseDuration, now: Date(),
            preference: preference)
        {
            return Claim(claimed: job, lease: .job(splitter: splitter), sentAt: sentAt)
        }
        guard shardsToo, let splitter else { return nil }
        sentAt = MonotonicClock.now()
        guard
            let claimed = try await splitter.claimShard(
                workerID: workerID, leaseDuration: leaseDuration,
                now: Date()),
            let shard = claimed.shard
        else { return nil }
        return Claim(claimed: claimed, lease: .shard(shard, splitter), sentAt: sentAt)
    }
}
