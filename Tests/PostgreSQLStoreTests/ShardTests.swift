import Foundation
import PostgreSQLStore
import PushStore
import XCTest

/// A large publish split into shards that several nodes claim, checkpoint, take over and end (`ShardedPublishQueue`).
final class ShardTests: PostgreSQLTestCase {
    /// Registers `count` devices; device `n` follows "news" unless `n % 10 == 9` (those follow only "sports"),
    /// and every fifth follows "sports" too. - Returns: the refs, in order.
    private func seed(_ store: PostgreSQLPushStore, count: Int) async throws -> [Int64] {
        let registered = try await store.registerDevices(
            (0..<count).map { DeviceRegistration(instanceID: instance, token: token($0)) })
        for (n, device) in registered.enumerated() {
            var interests: [String] = []
            if n % 10 != 9 { interests.append("news") }
            if n % 5 == 0 || n % 10 == 9 { interests.append("sports") }
            _ = try await store.setInterests(instanceID: instance, deviceID: device.device.id, interests: interests)
        }
        return try scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM devices").split(separator: ",")
            .compactMap { Int64($0) }
    }

    private func enqueueAndClaim(_ store: PostgreSQLPushStore, publishID: String = "p") async throws -> ClaimedJob {
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: publishID, kind: .interests, targets: ["news", "sports"],
                payload: Data("{}".utf8), createdAt: now))
        let claimed = try await store.claimJob(workerID: "planner", leaseDuration: .seconds(30), now: now)
        return try XCTUnwrap(claimed)
    }

    /// Every target of the shard, read in pages of `limit`.
    private func allTargets(_ store: PostgreSQLPushStore, _ claimed: ClaimedJob, limit: Int = 3) async throws -> [Int64]
    {
        let shard = try XCTUnwrap(claimed.shard)
        var refs: [Int64] = []
        var cursor = claimed.cursor
        while true {
            let page = try await store.targets(for: claimed.job, shard: shard, after: cursor, limit: limit)
            refs += page.targets.map(\.ref)
            XCTAssertGreaterThanOrEqual(page.cursor, cursor)
            cursor = page.cursor
            if page.isLast { return refs }
        }
    }

    func testSplitShardsStartWithTheirShareOfTargetsInTheGivenCounter() async throws {
        let store = try await openNode()
        _ = try await seed(store, count: 50)
        let job = try await enqueueAndClaim(store)
        let shards = try await store.splitPublish(
            job.id, workerID: "planner", shardSize: 10,
            targetsCounter: .estimateRemaining, now: now)
        XCTAssertEqual(shards, 5)
        let status = try await store.publishStatus(instanceID: job.job.instanceID, publishID: job.job.publishID)
        XCTAssertEqual(status?.counters[.estimateRemaining], 50, "five unclaimed shards of ten: summed by the status")
        let claimed = try await store.claimShard(workerID: "w", leaseDuration: .seconds(30), now: now)
        let shard = try XCTUnwrap(claimed)
        XCTAssertEqual(shard.counters[.estimateRemaining], 10, "a claim starts from its shard's share")
        let counted = try await store.targetCount(for: shard.job, shard: try XCTUnwrap(shard.shard))
        let paged = try await allTargets(store, shard)
        XCTAssertEqual(counted, Int64(paged.count), "the shard's own count is what its pages deliver")
        XCTAssertGreaterThan(counted, 10, "followers of both interests in its range, each once")
    }

    func testSplitShardsCoverEveryTargetExactlyOnceAcrossTwoNodes() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        let refs = try await seed(nodeA, count: 50)
        let job = try await enqueueAndClaim(nodeA)
        // "news" has 45 followers: boundaries at its 10th, 20th, 30th and 40th follower.
        let shards = try await nodeA.splitPublish(job.id, workerID: "planner", shardSize: 10, now: now)
        XCTAssertEqual(shards, 5)
        let asJob = try await nodeB.claimJob(workerID: "b", leaseDuration: .seconds(30), now: now)
        XCTAssertNil(asJob, "a split job is delivered only through its shards")
        var delivered: [Int64] = []
        var claimedShards: [Int] = []
        for turn in 0..<6 {
            let node = turn % 2 == 0 ? nodeA : nodeB
            guard let shard = try await node.claimShard(workerID: "w\(turn)", leaseDuration: .seconds(30), now: now)
            else {
                break
            }
            XCTAssertEqual(shard.id, job.id)
            XCTAssertEqual(shard.attempt, 1)
            claimedShards.append(try XCTUnwrap(shard.shard).number)
            delivered += try await allTargets(node, shard)
        }
        XCTAssertEqual(claimedShards, [0, 1, 2, 3, 4], "each shard claimed once, in order")
        XCTAssertEqual(delivered.sorted(), refs, "every follower of either interest once, no duplicates")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testSmallOrUsersPublishIsNotSplitAndKeepsItsLease() async throws {
        let store = try await openNode()
        _ = try await seed(store, count: 8)
        let job = try await enqueueAndClaim(store)
        let shards = try await store.splitPublish(job.id, workerID: "planner", shardSize: 10, now: now)
        XCTAssertEqual(shards, 0, "fewer followers than one shard")
        try await store.renewLease(job.id, workerID: "planner", leaseDuration: .seconds(30), now: now)
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "u", kind: .users, targets: ["alice"], payload: Data(), createdAt: now)
        )
        let users = try await store.claimJob(workerID: "planner", leaseDuration: .seconds(30), now: now)
        let usersID = try XCTUnwrap(users?.id)
        let usersShards = try await store.splitPublish(usersID, workerID: "planner", shardSize: 1, now: now)
        XCTAssertEqual(usersShards, 0)
        await assertLeaseLost(job.id) {
            _ = try await store.splitPublish(job.id, workerID: "someone-else", shardSize: 1, now: self.now)
        }
        try await store.close()
    }

    func testShardCheckpointSetsTotalsSoARepeatedCheckpointCountsOnce() async throws {
        let store = try await openNode()
        _ = try await seed(store, count: 30)
        let job = try await enqueueAndClaim(store)
        _ = try await store.splitPublish(job.id, workerID: "planner", shardSize: 10, now: now)
        let claimed = try await store.claimShard(workerID: "w", leaseDuration: .seconds(30), now: now)
        let shard = try XCTUnwrap(claimed?.shard)
        try await store.checkpointShard(
            job.id, shard: shard, workerID: "w", cursor: 3, totals: [.accepted(.apns): 3],
            deviceResults: [], answered: [])
        // The same checkpoint again: its COMMIT succeeded but the answer was lost (a dying connection).
        try await store.checkpointShard(
            job.id, shard: shard, workerID: "w", cursor: 3, totals: [.accepted(.apns): 3],
            deviceResults: [], answered: [])
        var status = try await store.publishStatus(instanceID: instance, publishID: "p")
        XCTAssertEqual(status?.counters[.accepted(.apns)], 3, "not 6")
        try await store.checkpointShard(
            job.id, shard: shard, workerID: "w", cursor: 5, totals: [.accepted(.apns): 5],
            deviceResults: [], answered: [])
        status = try await store.publishStatus(instanceID: instance, publishID: "p")
        XCTAssertEqual(status?.counters[.accepted(.apns)], 5)
        XCTAssertEqual(status?.state, .running)
        try await store.close()
    }

    func testExpiredShardIsTakenOverAtItsCheckpointAndTheFormerHolderIsFenced() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        let refs = try await seed(nodeA, count: 30)
        let job = try await enqueueAndClaim(nodeA)
        _ = try await nodeA.splitPublish(job.id, workerID: "planner", shardSize: 10, now: now)
        let first = try await nodeA.claimShard(workerID: "node-a", leaseDuration: .seconds(5), now: now)
        let shardA = try XCTUnwrap(first?.shard)
        XCTAssertEqual(shardA.number, 0)
        let answeredAbove = refs[5]
        try await nodeA.checkpointShard(
            job.id, shard: shardA, workerID: "node-a", cursor: refs[2],
            totals: [.accepted(.apns): 4], deviceResults: [], answered: [answeredAbove])
        // Node A dies: after the lease, node B takes the shard over where A's checkpoint left it.
        let second = try await nodeB.claimShard(
            workerID: "node-b", leaseDuration: .seconds(5), now: now.addingTimeInterval(4))
        XCTAssertEqual(second?.shard?.number, 1, "a live shard is skipped; the next one is claimed")
        let takeover = try await nodeB.claimShard(
            workerID: "node-b", leaseDuration: .seconds(5), now: now.addingTimeInterval(5))
        let shardB = try XCTUnwrap(takeover?.shard)
        XCTAssertEqual(shardB.number, 0)
        XCTAssertGreaterThan(shardB.epoch, shardA.epoch)
        XCTAssertEqual(takeover?.attempt, 2)
        XCTAssertEqual(takeover?.cursor, refs[2])
        XCTAssertEqual(takeover?.counters, [.accepted(.apns): 4])
        let skipped = try await nodeB.answeredTargets(job.id, shard: shardB)
        XCTAssertEqual(skipped, [answeredAbove])
        // Node A comes back: every write it tries is refused.
        await assertLeaseLost(job.id) {
            try await nodeA.checkpointShard(
                job.id, shard: shardA, workerID: "node-a", cursor: refs[8],
                totals: [.accepted(.apns): 9], deviceResults: [], answered: [])
        }
        await assertLeaseLost(job.id) {
            try await nodeA.renewShardLease(
                job.id, shard: shardA, workerID: "node-a", leaseDuration: .seconds(5),
                now: self.now.addingTimeInterval(6))
        }
        await assertLeaseLost(job.id) {
            _ = try await nodeA.finishShard(
                job.id, shard: shardA, workerID: "node-a", state: .finished,
                targetsTotal: 9, leaseDuration: .seconds(5), now: self.now.addingTimeInterval(6))
        }
        // The same worker name is fenced too once its shard was claimed again (a stalled node reclaiming its own).
        let stale = PublishShard(
            number: shardB.number, after: shardB.after, through: shardB.through,
            epoch: shardB.epoch - 1)
        await assertLeaseLost(job.id) {
            try await nodeB.renewShardLease(
                job.id, shard: stale, workerID: "node-b", leaseDuration: .seconds(5),
                now: self.now.addingTimeInterval(6))
        }
        let status = try await nodeA.publishStatus(instanceID: instance, publishID: "p")
        XCTAssertEqual(status?.counters[.accepted(.apns)], 4, "the fenced writes changed nothing")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testLastShardToEndLeasesTheJobAndItsEndAggregatesTheShards() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        _ = try await seed(nodeA, count: 30)
        let job = try await enqueueAndClaim(nodeA)
        let count = try await nodeA.splitPublish(job.id, workerID: "planner", shardSize: 10, now: now)
        XCTAssertEqual(count, 3)
        var claims: [(PostgreSQLPushStore, String, ClaimedJob)] = []
        for n in 0..<count {
            let node = n % 2 == 0 ? nodeA : nodeB
            let claimed = try await node.claimShard(workerID: "w\(n)", leaseDuration: .seconds(30), now: now)
            claims.append((node, "w\(n)", try XCTUnwrap(claimed)))
        }
        var ends: [ShardedPublishEnd?] = []
        for (n, (node, worker, claimed)) in claims.enumerated() {
            let shard = try XCTUnwrap(claimed.shard)
            try await node.checkpointShard(
                job.id, shard: shard, workerID: worker, cursor: 0,
                totals: [.accepted(.apns): Int64(n + 10), .targets: 10],
                deviceResults: [], answered: [])
            ends.append(
                try await node.finishShard(
                    job.id, shard: shard, workerID: worker,
                    state: n == 1 ? .expired : .finished, targetsTotal: 10,
                    leaseDuration: .seconds(30), now: now))
        }
        XCTAssertEqual(ends.dropLast().compactMap { $0 }, [], "only the last shard ends the publish")
        XCTAssertEqual(ends.last, ShardedPublishEnd(state: .expired, targetsTotal: 30))
        // The last shard's holder (w2) now holds the job and finishes it.
        try await nodeA.finishJob(job.id, workerID: "w2", state: .expired, targetsTotal: 30, summary: "s", now: now)
        let status = try await nodeB.publishStatus(instanceID: instance, publishID: "p")
        XCTAssertEqual(status?.state, .expired)
        XCTAssertEqual(status?.counters[.accepted(.apns)], 33)
        XCTAssertEqual(status?.counters[.targets], 30)
        XCTAssertEqual(try scalar("SELECT count(*) FROM publish_shards"), "0", "shards go when their publish ends")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testAJobWhoseLastShardHolderDiedIsClaimedToBeFinishedOnly() async throws {
        let store = try await openNode()
        _ = try await seed(store, count: 20)
        let job = try await enqueueAndClaim(store)
        let shards = try await store.splitPublish(job.id, workerID: "planner", shardSize: 10, now: now)
        XCTAssertEqual(shards, 2)
        for n in 0..<2 {
            let claimed = try await store.claimShard(workerID: "w", leaseDuration: .seconds(5), now: now)
            let end = try await store.finishShard(
                job.id, shard: try XCTUnwrap(claimed?.shard), workerID: "w",
                state: .finished, targetsTotal: 10, leaseDuration: .seconds(5), now: now)
            XCTAssertEqual(end != nil, n == 1)
        }
        let early = try await store.claimJob(workerID: "x", leaseDuration: .seconds(5), now: now.addingTimeInterval(4))
        XCTAssertNil(early, "the finisher's lease is live")
        let claimed = try await store.claimJob(
            workerID: "x", leaseDuration: .seconds(5), now: now.addingTimeInterval(5))
        XCTAssertEqual(claimed?.shardsEnded, ShardedPublishEnd(state: .finished, targetsTotal: 20))
        try await store.close()
    }

    func testCancelReachesEveryShardAndIsAnnouncedToListeningNodes() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        let (notices, heard) = AsyncStream.makeStream(of: QueueNotice.self)
        XCTAssertTrue(nodeB.listen { heard.yield($0) })
        // LISTEN is issued on the listener's own thread; it announces `.work` once it is in place.
        let listening = await awaitNotice(.work, on: notices)
        XCTAssertTrue(listening)
        _ = try await seed(nodeA, count: 30)
        let job = try await enqueueAndClaim(nodeA)
        let heardWork = await awaitNotice(.work, on: notices)
        XCTAssertTrue(heardWork, "the enqueue on node A was announced to node B")
        _ = try await nodeA.splitPublish(job.id, workerID: "planner", shardSize: 10, now: now)
        let running = try await nodeA.claimShard(workerID: "a", leaseDuration: .seconds(30), now: now)
        let shard = try XCTUnwrap(running?.shard)
        let cancellation = try await nodeB.cancelPublish(instanceID: instance, publishID: "p", now: now)
        XCTAssertEqual(cancellation, .running(job.id))
        let heardCancel = await awaitNotice(.cancelled(job.id), on: notices)
        XCTAssertTrue(heardCancel, "the cancel was announced")
        let renewed = try await nodeA.renewShardLease(
            job.id, shard: shard, workerID: "a", leaseDuration: .seconds(30),
            now: now)
        XCTAssertTrue(renewed, "the running shard's holder learns of the cancel")
        let queued = try await nodeB.claimShard(workerID: "b", leaseDuration: .seconds(30), now: now)
        XCTAssertEqual(queued?.cancelRequested, true, "a shard claimed after the cancel ends without sending")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testShardResultsWriteFailuresAndClearThemButNoRowPerSuccess() async throws {
        let store = try await openNode()
        let refs = try await seed(store, count: 20)
        let job = try await enqueueAndClaim(store)
        _ = try await store.splitPublish(job.id, workerID: "planner", shardSize: 10, now: now)
        let claimed = try await store.claimShard(workerID: "w", leaseDuration: .seconds(30), now: now)
        let shard = try XCTUnwrap(claimed?.shard)
        let at = now.addingTimeInterval(1)
        try await store.checkpointShard(
            job.id, shard: shard, workerID: "w", cursor: refs[1], totals: [:],
            deviceResults: [
                DeviceResult(device: refs[0], status: 200, at: at),
                DeviceResult(device: refs[1], status: 400, reason: "BadDeviceToken", at: at),
            ],
            answered: [])
        XCTAssertEqual(
            try scalar("SELECT count(*) FROM devices WHERE last_status IS NOT NULL"), "1",
            "the success wrote no row")
        XCTAssertEqual(try scalar("SELECT last_reason FROM devices WHERE id = \(refs[1])"), "BadDeviceToken")
        // A later success on the failed device clears the failure it shows.
        try await store.checkpointShard(
            job.id, shard: shard, workerID: "w", cursor: refs[1], totals: [:],
            deviceResults: [DeviceResult(device: refs[1], status: 200, at: at.addingTimeInterval(1))], answered: [])
        XCTAssertEqual(try scalar("SELECT last_status FROM devices WHERE id = \(refs[1])"), "200")
        try await store.close()
    }

    func testHeartbeatsCountTheLiveNodes() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        let first = try await nodeA.heartbeat(nodeID: "a", version: "1", now: now, liveWithin: .seconds(30))
        let second = try await nodeB.heartbeat(nodeID: "b", version: "1", now: now, liveWithin: .seconds(30))
        let later = try await nodeB.heartbeat(
            nodeID: "b", version: "1", now: now.addingTimeInterval(31),
            liveWithin: .seconds(30))
        XCTAssertEqual([first, second, later], [1, 2, 1], "node a went silent")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testANodeThatLeavesStopsCountingAtOnce() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        _ = try await nodeA.heartbeat(nodeID: "a", version: "1", now: now, liveWithin: .seconds(30))
        let both = try await nodeB.heartbeat(nodeID: "b", version: "1", now: now, liveWithin: .seconds(30))
        try await nodeA.leave(nodeID: "a")
        let after = try await nodeB.heartbeat(
            nodeID: "b", version: "1", now: now.addingTimeInterval(1),
            liveWithin: .seconds(30))
        XCTAssertEqual([both, after], [2, 1], "a clean stop is not a silence of 30 s")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testLiveNodesListsTheRecentHeartbeatsNewestFirstWithinTheLimit() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        _ = try await nodeA.heartbeat(nodeID: "a", version: "1.0", now: now, liveWithin: .seconds(30))
        _ = try await nodeB.heartbeat(
            nodeID: "b", version: "1.1", now: now.addingTimeInterval(5),
            liveWithin: .seconds(30))
        _ = try await nodeA.heartbeat(
            nodeID: "a", version: "1.0", now: now.addingTimeInterval(10),
            liveWithin: .seconds(30))
        let both = try await nodeB.liveNodes(now: now.addingTimeInterval(10), liveWithin: .seconds(30), limit: 10)
        XCTAssertEqual(both.map(\.nodeID), ["a", "b"], "a's heartbeat is the newer")
        XCTAssertEqual(both.map(\.version), ["1.0", "1.1"])
        XCTAssertEqual(both.first?.startedAt, now, "a renewed heartbeat keeps the start")
        XCTAssertEqual(both.first?.lastSeen, now.addingTimeInterval(10))
        let limited = try await nodeB.liveNodes(now: now.addingTimeInterval(10), liveWithin: .seconds(30), limit: 1)
        XCTAssertEqual(limited.map(\.nodeID), ["a"])
        let later = try await nodeB.liveNodes(now: now.addingTimeInterval(36), liveWithin: .seconds(30), limit: 10)
        XCTAssertEqual(later.map(\.nodeID), ["a"], "b went silent 31 s ago")
        // Out-of-range arguments are clamped, never trapped on: a negative window is no window (only a heartbeat
        // at `now` itself counts), a huge one is a day, a negative limit lists nothing.
        let noWindow = try await nodeB.liveNodes(now: now.addingTimeInterval(10), liveWithin: .seconds(-5), limit: 10)
        XCTAssertEqual(noWindow.map(\.nodeID), ["a"], "b's heartbeat is 5 s before now")
        let huge = try await nodeB.liveNodes(
            now: now.addingTimeInterval(10), liveWithin: .seconds(Int64.max),
            limit: 10)
        XCTAssertEqual(huge.map(\.nodeID), ["a", "b"])
        let noLimit = try await nodeB.liveNodes(now: now.addingTimeInterval(10), liveWithin: .seconds(30), limit: -1)
        XCTAssertEqual(noLimit, [], "a negative limit lists nothing")
        try await nodeA.close()
        try await nodeB.close()
    }

    /// Waits up to 10 s for `expected` among the notices.
    private func awaitNotice(_ expected: QueueNotice, on notices: AsyncStream<QueueNotice>) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await notice in notices where notice == expected { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
