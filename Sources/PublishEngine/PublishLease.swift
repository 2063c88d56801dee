import PushStore

/// What a claim holds a lease on, made once when the job or shard is claimed (`JobScheduler`): the run's store
/// calls go through it (`RunStore`), so no part of a run asks the store which capabilities it has.
enum PublishLease: Sendable {
    /// A whole job. `splitter`: the backend's shard calls, when it can split a large publish into shards.
    case job(splitter: (any ShardedPublishQueue)?)
    /// One shard of a split publish, with the backend that handed it out.
    case shard(PublishShard, any ShardedPublishQueue)

    /// The lease `claimed` holds: a shard's when the claim is one (and the backend hands out shards), else the job's.
    init(_ claimed: ClaimedJob, sharded: (any ShardedPublishQueue)?) {
        if let shard = claimed.shard, let sharded {
            self = .shard(shard, sharded)
        } else {
            self = .job(splitter: sharded)
        }
    }

    /// The shard this lease covers, nil for a whole job.
    var shard: PublishShard? {
        if case .shard(let shard, _) = self { return shard }
        return nil
    }
}
