import Foundation

/// One shard of a split publish: the targets with `after < ref <= through` (no upper bound when `through` is nil),
/// claimed, leased, checkpointed and ended on its own, by any node.
package struct PublishShard: Sendable, Hashable {
    /// 0-based, in ref order.
    package var number: Int
    package var after: Int64
    package var through: Int64?
    /// The fencing token: raised by every claim of the shard, and checked by every write of its holder, so a
    /// holder whose lease expired and was claimed again (even by the same node) writes nothing more.
    package var epoch: Int64

    package init(number: Int, after: Int64, through: Int64?, epoch: Int64) {
        self.number = number
        self.after = after
        self.through = through
        self.epoch = epoch
    }

    /// Whether `ref` lies in this shard.
    package func contains(_ ref: Int64) -> Bool { ref > after && through.map { ref <= $0 } ?? true }
}

/// How a split publish ended once its last shard did.
package struct ShardedPublishEnd: Sendable, Equatable {
    /// `.cancelled` when the publish was cancelled, else `.expired` when a shard expired, else `.failed` when one
    /// failed, else `.finished`.
    package var state: PublishState
    /// The shards' targets, summed.
    package var targetsTotal: Int64

    package init(state: PublishState, targetsTotal: Int64) {
        self.state = state
        self.targetsTotal = targetsTotal
    }
}

/// A node of a shared database, as its heartbeats recorded it (`/ready` lists them).
package struct NodeRecord: Sendable, Equatable {
    /// The engine's worker id: `node-<host>-<pid>` unless configured.
    package var nodeID: String
    /// The release the node runs, so a rolling upgrade shows which nodes are still on the old one.
    package var version: String
    package var startedAt: Date
    package var lastSeen: Date

    package init(nodeID: String, version: String, startedAt: Date, lastSeen: Date) {
        self.nodeID = nodeID
        self.version = version
        self.startedAt = startedAt
        self.lastSeen = lastSeen
    }
}

/// A publish queue that splits a large publish into shards (ranges of device refs) that any node claims, so one
/// publish is delivered by every node. Optional: a backend without it (SQLite, in memory) delivers each publish as
/// one unit, which the engine falls back to.
///
/// The loop, besides `PublishQueue`'s: the node that claims a fresh job calls `splitPublish`; if it split, every
/// node's `claimShard` hands out the shards, whose holders renew, checkpoint and end them with the calls below.
/// The holder of the last shard to end gets the job's lease back and finishes the job with `finishJob` (a node
/// that dies before that leaves the job to `claimJob`, which returns it with `shardsEnded`).
package protocol ShardedPublishQueue: PublishQueue {
    /// Splits the job `workerID` holds into shards of about `shardSize` targets each, in one transaction, unless
    /// it is too small for two (or is not an interests publish, or has made progress already). When it splits,
    /// it releases the job's lease: the job is then delivered only through its shards.
    /// Each shard starts with counter `targetsCounter` (when given) at `shardSize`, its share of the targets, so a
    /// status sums the targets of shards no node has claimed yet (the completion estimate; a claimed shard's run
    /// replaces it with its own count).
    /// - Returns: the number of shards, 0 when it did not split.
    /// - Throws: `PushStoreError.leaseLost`.
    func splitPublish(
        _ job: PublishJobID, workerID: String, shardSize: Int, targetsCounter: PublishCounters.Counter?, now: Date
    ) async throws -> Int
    /// Leases the first shard that is queued, or running with an expired lease, to `workerID`, raising its epoch.
    /// - Returns: the claim (with `shard` set), or nil when no shard is claimable.
    func claimShard(workerID: String, leaseDuration: Duration, now: Date) async throws -> ClaimedJob?
    /// Extends the shard's lease. - Returns: whether the publish was cancelled (the holder must stop).
    /// - Throws: `PushStoreError.leaseLost` when `workerID` no longer holds the shard at `shard.epoch`.
    @discardableResult
    func renewShardLease(
        _ job: PublishJobID, shard: PublishShard, workerID: String, leaseDuration: Duration, now: Date
    ) async throws -> Bool
    /// Targets of the shard: like `targets(for:after:limit:)`, but only refs up to `shard.through`.
    func targets(for job: PublishJob, shard: PublishShard, after cursor: Int64, limit: Int) async throws -> TargetPage
    /// The valid devices the shard targets (each once), for the completion estimate: read once when its run starts.
    func targetCount(for job: PublishJob, shard: PublishShard) async throws -> Int64
    /// In one transaction, fenced by the shard's lease and epoch: advances the shard's cursor (never backwards),
    /// SETS its counters to `totals` (the shard's counters since it began, not increments: a checkpoint written
    /// again after a COMMIT whose answer was lost cannot count twice), records `deviceResults` (failures in full;
    /// a success only clears a failure the device shows) and remembers `answered` refs above the cursor.
    /// - Throws: `PushStoreError.leaseLost`.
    func checkpointShard(
        _ job: PublishJobID, shard: PublishShard, workerID: String, cursor: Int64, totals: PublishCounters,
        deviceResults: [DeviceResult], answered: [Int64]
    ) async throws
    /// Refs of the shard above its cursor that already have an answer.
    func answeredTargets(_ job: PublishJobID, shard: PublishShard) async throws -> Set<Int64>
    /// Ends the shard as `state` with `targetsTotal`. When no other shard of the job is left open, leases the job
    /// to `workerID` for `leaseDuration` and returns how the publish ended; the caller then finishes it with
    /// `finishJob`. - Throws: `PushStoreError.leaseLost`.
    func finishShard(
        _ job: PublishJobID, shard: PublishShard, workerID: String, state: PublishState, targetsTotal: Int64,
        leaseDuration: Duration, now: Date
    ) async throws -> ShardedPublishEnd?
    /// Records that node `nodeID` (running `version`) is alive at `now`. - Returns: the nodes seen within
    /// `liveWithin` of `now`, this one included.
    func heartbeat(nodeID: String, version: String, now: Date, liveWithin: Duration) async throws -> Int
    /// Node `nodeID` stops cleanly: its row goes at once, so the others' share of per-instance limits grows back
    /// now instead of after `liveWithin`.
    func leave(nodeID: String) async throws
    /// The nodes seen within `liveWithin` of `now`, most recently seen first, at most `limit` of them.
    func liveNodes(now: Date, liveWithin: Duration, limit: Int) async throws -> [NodeRecord]
}

/// What another node announced about the queue (PostgreSQL's LISTEN/NOTIFY); a hint to look, never the truth.
package enum QueueNotice: Sendable, Equatable {
    /// A publish was queued or split into shards: claim.
    case work
    /// The publish was cancelled: stop its runs here.
    case cancelled(PublishJobID)
}

/// A backend that can announce queue changes made by any node.
package protocol QueueNotifying: Sendable {
    /// Calls `onNotice` (on a thread of the store's) for each announcement until the store closes. `.work` is also
    /// announced each time listening starts (at first, and when the listening connection is up again after it was
    /// down, since announcements made meanwhile were missed). - Returns: false when this backend cannot listen.
    func listen(_ onNotice: @escaping @Sendable (QueueNotice) -> Void) -> Bool
}

extension ShardedPublishQueue {
    /// Splits without a targets counter.
    package func splitPublish(_ job: PublishJobID, workerID: String, shardSize: Int, now: Date) async throws -> Int {
        try await splitPublish(job, workerID: workerID, shardSize: shardSize, targetsCounter: nil, now: now)
    }
}
