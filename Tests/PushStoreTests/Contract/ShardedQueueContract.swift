import Foundation
import PushStore
import Testing

/// A large publish is delivered each device once, whether the backend splits it into shards
/// (`ShardedPublishQueue`: PostgreSQL) or delivers it whole (SQLite, in memory); and on a backend with shards, a
/// taken-over shard resumes at its checkpoint with its counters as totals.
final class ShardedQueueContract: StoreContract {
    /// 60 devices: device n follows "big" unless n % 6 == 5 (those follow only "small"); every fourth follows "small"
    /// too. - Returns: the queued publish to both.
    private func seed(_ store: any PushStorage) async throws -> PublishJob {
        for n in 0..<60 {
            let device = try await register(store, n)
            var follows: [String] = []
            if n % 6 != 5 { follows.append("big") }
            if n % 4 == 0 || n % 6 == 5 { follows.append("small") }
            _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: follows)
        }
        let job = PublishJob(
            instanceID: instance, publishID: "p", kind: .interests, targets: ["big", "small"],
            payload: Data(), createdAt: clock.now,
            traceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", traceState: "v=1")
        _ = try await store.enqueuePublish(job)
        return job
    }

    /// Every target of a claim (a shard's or a whole job's), page by page.
    private func read(_ store: any PushStorage, _ claimed: ClaimedJob, pageSize: Int = 4) async throws -> [Int64] {
        var refs: [Int64] = []
        var cursor = claimed.cursor
        for _ in 0..<1000 {
            let page: TargetPage
            if let shard = claimed.shard, let sharded = store.sharding {
                page = try await sharded.targets(for: claimed.job, shard: shard, after: cursor, limit: pageSize)
            } else {
                page = try await store.targets(for: claimed.job, after: cursor, limit: pageSize)
            }
            refs += page.targets.map(\.ref)
            cursor = page.cursor
            if page.isLast { return refs }
        }
        Issue.record("paging does not terminate")
        return refs
    }

    /// A store holding `seed`'s publish, claimed by "planner" and split into shards of 10; the test ends cancelled on
    /// a backend that delivers every publish whole.
    private func openSplit(_ backend: ContractBackend) async throws
        -> (store: any PushStorage, sharded: any ShardedPublishQueue, job: PublishJobID)
    {
        let store = try await openStore(backend)
        guard let sharded = store.sharding else {
            try await store.close()
            try Test.cancel("\(backend) delivers every publish whole")
        }
        _ = try await seed(store)
        let planned = try await store.claimJob(workerID: "planner", leaseDuration: .seconds(30), now: clock.now)
        let jobID = try #require(planned?.id)
        _ = try await sharded.splitPublish(jobID, workerID: "planner", shardSize: 10, now: clock.now)
        return (store, sharded, jobID)
    }

    @Test(arguments: ContractBackend.selected)
    func testLargePublishReachesEachDeviceOnceWhetherSplitOrWhole(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let job = try await seed(store)
        let whole = try await read(
            store,
            ClaimedJob(
                id: PublishJobID(rawValue: 0), job: job, cursor: 0, counters: [:],
                attempt: 1, leaseExpiresAt: clock.now))
        #expect(whole.count == 60)
        let claimed = try await store.claimJob(workerID: "planner", leaseDuration: .seconds(30), now: clock.now)
        let planned = try #require(claimed)
        // The engine learns that a backend shards from what it declares, never by casting: the two must agree.
        #expect((store.sharding != nil) == (store is any ShardedPublishQueue), "declared sharding = conformance")
        guard let sharded = store.sharding else {
            // Delivered whole: the one claim reads every target.
            let refs = try await read(store, planned)
            #expect(refs == whole)
            return try await store.close()
        }
        let shards = try await sharded.splitPublish(planned.id, workerID: "planner", shardSize: 10, now: clock.now)
        #expect(shards == 6, "\"big\" has 50 followers: a boundary every 10th")
        var refs: [Int64] = []
        var numbers: [Int] = []
        while let shard = try await sharded.claimShard(
            workerID: "w\(numbers.count % 2)", leaseDuration: .seconds(30),
            now: clock.now)
        {
            numbers.append(try #require(shard.shard).number)
            #expect(shard.job.traceParent == job.traceParent, "a shard continues the publish's trace")
            #expect(shard.job.traceState == "v=1")
            refs += try await read(store, shard)
        }
        #expect(numbers == Array(0..<shards))
        #expect(refs.sorted() == whole, "every target in exactly one shard")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testTakenOverShardResumesAtItsCheckpointWithTotalsNotSums(_ backend: ContractBackend) async throws {
        let (store, sharded, jobID) = try await openSplit(backend)
        let first = try await sharded.claimShard(workerID: "a", leaseDuration: .seconds(5), now: clock.now)
        let shard = try #require(first?.shard)
        let refs = try await read(store, try #require(first))
        // Written twice, as after a COMMIT whose answer was lost: the totals count once.
        for _ in 0..<2 {
            try await sharded.checkpointShard(
                jobID, shard: shard, workerID: "a", cursor: refs[3],
                totals: [.targets: 5, .accepted(.apns): 5], deviceResults: [],
                answered: [refs[5]])
        }
        let running = try await store.publishStatus(instanceID: instance, publishID: "p")
        #expect(running?.counters[.accepted(.apns)] == 5)
        let takeover = try await sharded.claimShard(
            workerID: "b", leaseDuration: .seconds(5),
            now: clock.now.addingTimeInterval(5))
        #expect(takeover?.shard?.number == shard.number)
        #expect(takeover?.cursor == refs[3])
        #expect(takeover?.counters == [.targets: 5, .accepted(.apns): 5])
        let answered = try await sharded.answeredTargets(jobID, shard: try #require(takeover?.shard))
        #expect(answered == [refs[5]])
        do {
            try await sharded.checkpointShard(
                jobID, shard: shard, workerID: "a", cursor: refs[6],
                totals: [.accepted(.apns): 99], deviceResults: [], answered: [])
            Issue.record("the former holder is fenced")
        } catch {
            #expect((error as? PushStoreError) == .leaseLost(jobID))
        }
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testAShardRemembersOnlyItsOwnAnsweredRefsAboveItsCursor(_ backend: ContractBackend) async throws {
        let (store, sharded, jobID) = try await openSplit(backend)
        let claimedFirst = try await sharded.claimShard(workerID: "a", leaseDuration: .seconds(30), now: clock.now)
        let claimedNext = try await sharded.claimShard(workerID: "b", leaseDuration: .seconds(30), now: clock.now)
        let (firstClaim, nextClaim) = (try #require(claimedFirst), try #require(claimedNext))
        let (first, next) = (try #require(firstClaim.shard), try #require(nextClaim.shard))
        let refs = try await read(store, firstClaim)
        let nextRefs = try await read(store, nextClaim)
        #expect(refs.count > 8 && nextRefs.count > 5)
        #expect(nextRefs[0] == refs[refs.count - 1] + 1, "every device is a target: the shards' refs are consecutive")
        /// A checkpoint of `shard` by `worker`, then the answered sets of both shards.
        func checkpoint(_ shard: PublishShard, _ worker: String, cursor: Int64, _ answered: [Int64]) async throws
            -> (first: Set<Int64>, next: Set<Int64>)
        {
            try await sharded.checkpointShard(
                jobID, shard: shard, workerID: worker, cursor: cursor, totals: [:], deviceResults: [],
                answered: answered)
            return (
                try await sharded.answeredTargets(jobID, shard: first),
                try await sharded.answeredTargets(jobID, shard: next)
            )
        }
        // The first shard's checkpoint lists its last refs and the next shard's first ones, one run of consecutive
        // refs across the boundary: the first shard remembers its own part only, the next shard none of it.
        let tail = Array(refs.suffix(4))
        var answered = try await checkpoint(first, "a", cursor: refs[1], [refs[3]] + tail + nextRefs.prefix(3))
        #expect(answered.first == Set([refs[3]] + tail))
        #expect(answered.next == [])
        // The next shard's own run, its cursor inside it.
        answered = try await checkpoint(next, "b", cursor: nextRefs[0], Array(nextRefs.prefix(5)))
        #expect(answered.next == Set(nextRefs[1..<5]))
        #expect(answered.first == Set([refs[3]] + tail))
        // The first shard's cursor moves into its last run, then past it: the next shard's refs stay.
        answered = try await checkpoint(first, "a", cursor: refs[refs.count - 3], [])
        #expect(answered.first == Set(refs.suffix(2)))
        answered = try await checkpoint(first, "a", cursor: refs[refs.count - 1], [])
        #expect(answered.first == [])
        #expect(answered.next == Set(nextRefs[1..<5]))
        try await store.close()
    }
}
