import BeamsModel
import Foundation
import PushStore

/// The store calls of one run, through its lease (`PublishLease`): a shard's calls when the run delivers one shard
/// of a split publish, else the job's. The runner, feeder and finisher stay the same for both.
struct RunStore: Sendable {
    let context: PublishContext
    let claimed: ClaimedJob
    let lease: PublishLease

    init(context: PublishContext, run: PublishRun) {
        self.context = context
        claimed = run.claimed
        lease = run.held
    }

    private var workerID: String { context.settings.workerID }

    /// Extends the lease. - Returns: whether the publish was cancelled meanwhile.
    func renewLease(_ duration: Duration) async throws -> Bool {
        switch lease {
        case .shard(let shard, let queue):
            return try await queue.renewShardLease(
                claimed.id, shard: shard, workerID: workerID,
                leaseDuration: duration, now: Date())
        case .job:
            return try await context.store.renewLease(
                claimed.id, workerID: workerID, leaseDuration: duration,
                now: Date())
        }
    }

    func targets(after cursor: Int64, limit: Int) async throws -> TargetPage {
        switch lease {
        case .shard(let shard, let queue):
            return try await queue.targets(for: claimed.job, shard: shard, after: cursor, limit: limit)
        case .job:
            return try await context.store.targets(for: claimed.job, after: cursor, limit: limit)
        }
    }

    func answeredTargets() async throws -> Set<Int64> {
        switch lease {
        case .shard(let shard, let queue): return try await queue.answeredTargets(claimed.id, shard: shard)
        case .job: return try await context.store.answeredTargets(claimed.id)
        }
    }

    /// How many targets this run has in all (its shard's, for a shard), for the completion estimate: the union of a
    /// shard's interests, the sum of a whole publish's interests' followers (a device following two of them counts
    /// twice, so a multi-interest estimate is an upper bound), or the channels. Nil when not known before fan-out
    /// (users and Live Activity publishes: the estimate is then left out).
    func targetCount(plan: PublishPlan) async throws -> Int64? {
        let job = claimed.job
        switch plan.mode {
        case .broadcast(let broadcast):
            return Int64(broadcast.channels.count)
        case .liveActivity:
            return nil
        case .devices:
            guard job.kind == .interests else { return nil }
            if case .shard(let shard, let queue) = lease { return try await queue.targetCount(for: job, shard: shard) }
            var total: Int64 = 0
            for interest in Set(job.targets) {
                total += Int64(try await context.store.subscriberCount(instanceID: job.instanceID, interest: interest))
            }
            return total
        }
    }

    /// Writes `batch`. A shard's counters are written as totals (`totals`: what was written before plus the batch),
    /// so a checkpoint repeated after a COMMIT whose answer was lost cannot count twice.
    func checkpoint(_ batch: PublishRun.Checkpoint, totals: PublishCounters) async throws {
        switch lease {
        case .shard(let shard, let queue):
            try await queue.checkpointShard(
                claimed.id, shard: shard, workerID: workerID, cursor: batch.cursor,
                totals: totals, deviceResults: batch.results, answered: batch.answered)
        case .job:
            try await context.store.checkpoint(
                claimed.id, workerID: workerID, cursor: batch.cursor,
                counters: batch.counters, deviceResults: batch.results,
                answered: batch.answered)
        }
    }

    /// Ends this run's shard (nothing for a whole job). - Returns: how the publish ended when this was its last
    /// open shard (this node then holds the job's lease and finishes it), nil otherwise.
    func finishShard(state: PublishState, total: Int64) async throws -> ShardedPublishEnd? {
        guard case .shard(let shard, let queue) = lease else { return nil }
        return try await queue.finishShard(
            claimed.id, shard: shard, workerID: workerID, state: state,
            targetsTotal: total, leaseDuration: context.settings.leaseDuration,
            now: Date())
    }

    /// Splits a fresh job into shards of `shardSize` targets when the backend can and the job is large enough.
    /// - Returns: the number of shards (0: deliver it whole).
    func split(shardSize: Int) async throws -> Int {
        guard shardSize > 0, case .job(let splitter?) = lease, claimed.cursor == 0, claimed.counters.isEmpty
        else { return 0 }
        // Each shard starts with its share of targets left, so the completion estimate sees shards no node sends yet.
        return try await splitter.splitPublish(
            claimed.id, workerID: workerID, shardSize: shardSize,
            targetsCounter: .estimateRemaining, now: Date())
    }
}
