import Foundation
import XCTest

import PushStore

final class PublishQueueContract: StoreContract {
    let lease = Duration.seconds(30)

    func publish(_ id: String, kind: PublishKind = .interests, targets: [String] = ["news"]) -> PublishJob {
        PublishJob(
            instanceID: instance, publishID: id, kind: kind, targets: targets, payload: Data("payload-\(id)".utf8),
            webhookURL: "http://127.0.0.1:1/hook", createdAt: clock.now)
    }

    func testEnqueuedJobIsClaimedWithItsPayload() async throws {
        let store = try await openStore()
        let job = publish("p1", targets: ["a", "b"])
        let id = try await store.enqueuePublish(job)
        let depth = try await store.queueDepth()
        XCTAssertEqual(depth, 1)
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(claimed?.id, id)
        XCTAssertEqual(claimed?.job, job)
        XCTAssertEqual(claimed?.cursor, 0)
        XCTAssertEqual(claimed?.attempt, 1)
        XCTAssertEqual(claimed?.counters, [:])
        XCTAssertEqual(claimed?.leaseExpiresAt, clock.now.addingTimeInterval(30))
        let status = try await store.publishStatus(instanceID: instance, publishID: "p1")
        XCTAssertEqual(status?.state, .running)
        XCTAssertEqual(status?.startedAt, clock.now)
        try await store.close()
    }

    /// A channels (broadcast) publish is a job kind of its own: claimed and read back as `channels`, and its
    /// targets are the empty last page (the channels are in the payload, which only the engine reads), even when
    /// the instance has devices.
    func testChannelsPublishKeepsItsKindAndHasNoTargets() async throws {
        let store = try await openStore()
        _ = try await store.registerDevice(DeviceRegistration(instanceID: instance, token: token(1)))
        let job = publish("pubid-channels-1", kind: .channels, targets: [])
        _ = try await store.enqueuePublish(job)
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(claimed?.job, job)
        let page = try await store.targets(for: job, after: 0, limit: 10)
        XCTAssertEqual(page, TargetPage(targets: [], cursor: 0, isLast: true))
        let status = try await store.publishStatus(instanceID: instance, publishID: "pubid-channels-1")
        XCTAssertEqual(status?.kind, .channels)
        try await store.close()
    }

    /// The trace context of the request that accepted a publish is claimed with the job, so the node that runs it
    /// continues the trace; a job without one claims nil.
    func testTraceContextIsStoredWithTheJobAndClaimedWithIt() async throws {
        let store = try await openStore()
        var traced = publish("traced")
        traced.traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        traced.traceState = "vendor=x,other=y"
        _ = try await store.enqueuePublish(traced)
        _ = try await store.enqueuePublish(publish("plain"))
        let first = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(first?.job.traceParent, traced.traceParent)
        XCTAssertEqual(first?.job.traceState, "vendor=x,other=y")
        let second = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(second?.job.publishID, "plain")
        XCTAssertNil(second?.job.traceParent)
        XCTAssertNil(second?.job.traceState)
        try await store.close()
    }

    func testDuplicatePublishIDIsRefusedPerInstance() async throws {
        let store = try await openStore()
        _ = try await store.enqueuePublish(publish("p1"))
        let again = publish("p1")
        await XCTAssertThrowsAsync(PushStoreError.duplicatePublish(publishID: "p1")) {
            _ = try await store.enqueuePublish(again)
        }
        var other = publish("p1")
        other.instanceID = "another-instance"
        _ = try await store.enqueuePublish(other)
        let depth = try await store.queueDepth()
        XCTAssertEqual(depth, 2)
        try await store.close()
    }

    func testClaimsOldestFirstAndSkipsLeasedJobs() async throws {
        let store = try await openStore()
        let big = try await store.enqueuePublish(publish("big"))
        clock.advance(1)
        let small = try await store.enqueuePublish(publish("small"))
        let first = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        let second = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        let third = try await store.claimJob(workerID: "w3", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(first?.id, big)
        XCTAssertEqual(second?.id, small, "a running job must not block the next one")
        XCTAssertNil(third)
        try await store.close()
    }

    func testClaimPrefersTheInstanceWithFewestRunsOnTheNodeThenTheOldest() async throws {
        let store = try await openStore()
        func enqueue(_ id: String, of instanceID: String) async throws -> PublishJobID {
            var job = publish(id)
            job.instanceID = instanceID
            clock.advance(1)
            return try await store.enqueuePublish(job)
        }
        let a1 = try await enqueue("a1", of: "busy")
        let a2 = try await enqueue("a2", of: "busy")
        let c1 = try await enqueue("c1", of: "some")
        let b1 = try await enqueue("b1", of: "idle")
        let node = ClaimPreference(runsByInstance: ["busy": 8, "some": 1])
        let first = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: node)
        XCTAssertEqual(first?.id, b1, "the only instance with no run on the node goes first, though its job is newest")
        let second = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: node)
        XCTAssertEqual(second?.id, c1, "then the instance with fewer runs")
        let floor = ClaimPreference(runsByInstance: ["busy": 8, "some": 1], onlyAbsentInstances: true)
        let none = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: floor)
        XCTAssertNil(none, "a floor claim takes no job of an instance running here")
        let third = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: node)
        XCTAssertEqual(third?.id, a1, "among one instance's jobs, the oldest")
        let fourth = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(fourth?.id, a2)
        try await store.close()
    }

    func testLeaseHolderOnlyMayCheckpointRenewOrFinish() async throws {
        let store = try await openStore()
        let id = try await store.enqueuePublish(publish("p1"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        await XCTAssertThrowsAsync(PushStoreError.leaseLost(id)) {
            try await store.checkpoint(id, workerID: "w2", cursor: 5, counters: [.accepted(.apns): 1], deviceResults: [])
        }
        await XCTAssertThrowsAsync(PushStoreError.leaseLost(id)) {
            try await store.renewLease(id, workerID: "w2", leaseDuration: self.lease, now: self.clock.now)
        }
        // The lease expires and another worker takes over: the first one is locked out.
        clock.advance(31)
        let takeover = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(takeover?.attempt, 2)
        await XCTAssertThrowsAsync(PushStoreError.leaseLost(id)) {
            try await store.finishJob(id, workerID: "w1", state: .finished, targetsTotal: 0, summary: nil, now: self.clock.now)
        }
        try await store.renewLease(id, workerID: "w2", leaseDuration: lease, now: clock.now)
        try await store.finishJob(id, workerID: "w2", state: .finished, targetsTotal: 0, summary: "done", now: clock.now)
        await XCTAssertThrowsAsync(PushStoreError.leaseLost(id)) {
            try await store.checkpoint(id, workerID: "w2", cursor: 9, counters: [:], deviceResults: [])
        }
        let status = try await store.publishStatus(instanceID: instance, publishID: "p1")
        XCTAssertEqual(status?.counters, [:], "a refused checkpoint changes nothing")
        XCTAssertEqual(status?.state, .finished)
        XCTAssertEqual(status?.summary, "done")
        let depth = try await store.queueDepth()
        XCTAssertEqual(depth, 0)
        try await store.close()
    }

    func testRenewedLeaseIsNotClaimable() async throws {
        let store = try await openStore()
        _ = try await store.enqueuePublish(publish("p1"))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)!
        clock.advance(20)
        try await store.renewLease(claimed.id, workerID: "w1", leaseDuration: lease, now: clock.now)
        clock.advance(20)
        let stolen = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        XCTAssertNil(stolen)
        try await store.close()
    }

    func testAnsweredTargetsAboveTheCursorAreRememberedUntilTheCursorPassesThem() async throws {
        let store = try await openStore()
        let id = try await store.enqueuePublish(publish("p1"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(id, workerID: "w1", cursor: 3, counters: [:], deviceResults: [], answered: [2, 5, 9])
        var answered = try await store.answeredTargets(id)
        XCTAssertEqual(answered, [5, 9], "refs at or below the cursor need no memory")
        try await store.checkpoint(id, workerID: "w1", cursor: 6, counters: [:], deviceResults: [], answered: [12])
        answered = try await store.answeredTargets(id)
        XCTAssertEqual(answered, [9, 12])
        // A crash: the next worker sees the same set.
        clock.advance(31)
        let resumed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(resumed?.cursor, 6)
        answered = try await store.answeredTargets(id)
        XCTAssertEqual(answered, [9, 12])
        try await store.finishJob(id, workerID: "w2", state: .finished, targetsTotal: 0, summary: nil, now: clock.now)
        answered = try await store.answeredTargets(id)
        XCTAssertEqual(answered, [], "a finished job keeps no progress rows")
        try await store.close()
    }

    func testCheckpointAddsCountersKeepsCursorMonotonicAndAppliesResults() async throws {
        let store = try await openStore()
        let device = try await register(store, 1)
        _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "news")
        let id = try await store.enqueuePublish(publish("p1"))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)!
        let target = try await store.targets(for: claimed.job, after: claimed.cursor, limit: 10).targets[0]
        clock.advance(1)
        try await store.checkpoint(
            id, workerID: "w1", cursor: 10, counters: [.accepted(.apns): 3, .failed(.apns, reason: "BadDeviceToken"): 1],
            deviceResults: [DeviceResult(device: target.ref, status: 400, reason: "BadDeviceToken", at: clock.now, effect: .badToken)])
        try await store.checkpoint(id, workerID: "w1", cursor: 4, counters: [.accepted(.apns): 2, .environmentRetries: 0], deviceResults: [])
        clock.advance(31)
        let resumed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(resumed?.cursor, 10)
        XCTAssertEqual(resumed?.counters, [.accepted(.apns): 5, .failed(.apns, reason: "BadDeviceToken"): 1])
        let stored = try await store.device(instanceID: instance, id: device.id)
        XCTAssertNotNil(stored?.invalidatedAt)
        try await store.close()
    }

    func testCrashedJobResumesFromCheckpointAfterReopenAndLeaseExpiry() async throws {
        var store = try await openStore()
        var expected: [String] = []
        for n in 0..<25 {
            let device = try await register(store, n)
            _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: n % 2 == 0 ? "a" : "b")
            expected.append(device.token)
        }
        let id = try await store.enqueuePublish(publish("p1", targets: ["a", "b"]))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)!
        let page = try await store.targets(for: claimed.job, after: claimed.cursor, limit: 10)
        try await store.checkpoint(id, workerID: "w1", cursor: page.cursor, counters: [.accepted(.apns): 10], deviceResults: [])
        // Worker w1 dies here: the store goes away without finishing the job.
        try await store.close()

        store = try await openStore()
        clock.advance(10)
        let early = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        XCTAssertNil(early, "the lease of the crashed worker has not expired yet")
        clock.advance(21)
        let resumed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(resumed?.id, id)
        XCTAssertEqual(resumed?.attempt, 2)
        XCTAssertEqual(resumed?.cursor, page.cursor)
        XCTAssertEqual(resumed?.counters, [.accepted(.apns): 10])
        var rest: [String] = []
        var cursor = resumed!.cursor
        while true {
            let next = try await store.targets(for: resumed!.job, after: cursor, limit: 4)
            rest += next.targets.map(\.token)
            cursor = next.cursor
            if next.isLast { break }
        }
        XCTAssertEqual(page.targets.map(\.token) + rest, expected, "resumed without skipping or repeating a device")
        try await store.checkpoint(id, workerID: "w2", cursor: cursor, counters: [.accepted(.apns): 15], deviceResults: [])
        try await store.finishJob(id, workerID: "w2", state: .finished, targetsTotal: 25, summary: nil, now: clock.now)
        let status = try await store.publishStatus(instanceID: instance, publishID: "p1")
        XCTAssertEqual(status?.state, .finished)
        XCTAssertEqual(status?.counters, [.accepted(.apns): 25])
        XCTAssertEqual(status?.targetsTotal, 25)
        XCTAssertEqual(status?.attempts, 2)
        XCTAssertEqual(status?.finishedAt, clock.now)
        try await store.close()
    }

    func testConcurrentEnqueuesAreAllCommittedAndSurviveReopen() async throws {
        let first = try await openStore()
        let ids = try await withThrowingTaskGroup(of: PublishJobID.self) { [first] group in
            for job in (0..<1000).map({ publish("p\($0)") }) {
                group.addTask { try await first.enqueuePublish(job) }
            }
            return try await group.reduce(into: Set<PublishJobID>()) { $0.insert($1) }
        }
        XCTAssertEqual(ids.count, 1000)
        try await first.close()

        let store = try await openStore()
        let depth = try await store.queueDepth()
        XCTAssertEqual(depth, 1000)
        let status = try await store.publishStatus(instanceID: instance, publishID: "p999")
        XCTAssertEqual(status?.state, .queued)
        try await store.close()
    }

    func testAFailedWriteDoesNotUndoConcurrentWrites() async throws {
        let store = try await openStore()
        _ = try await store.enqueuePublish(publish("dup"))
        let (x1, dup, x2) = (publish("x1"), publish("dup"), publish("x2"))
        async let a = store.enqueuePublish(x1)
        async let b = store.enqueuePublish(dup)
        async let c = store.enqueuePublish(x2)
        _ = try await a
        _ = try await c
        do {
            _ = try await b
            XCTFail("duplicate accepted")
        } catch {
            XCTAssertEqual(error as? PushStoreError, .duplicatePublish(publishID: "dup"))
        }
        let depth = try await store.queueDepth()
        XCTAssertEqual(depth, 3)
        try await store.close()
    }

    func testRecentPublishesNewestFirstWithCounters() async throws {
        let store = try await openStore()
        for n in 0..<5 {
            _ = try await store.enqueuePublish(publish("p\(n)"))
            clock.advance(1)
        }
        var other = publish("elsewhere")
        other.instanceID = "another-instance"
        _ = try await store.enqueuePublish(other)
        let recent = try await store.recentPublishes(instanceID: instance, limit: 3)
        XCTAssertEqual(recent.map(\.publishID), ["p4", "p3", "p2"])
        XCTAssertTrue(recent.allSatisfy { $0.state == .queued && $0.startedAt == nil })
        let missing = try await store.publishStatus(instanceID: instance, publishID: "nope")
        XCTAssertNil(missing)
        try await store.close()
    }
}
