import Foundation
import PushStore
import Testing

final class PublishQueueContract: StoreContract {
    let lease = Duration.seconds(30)

    func publish(_ id: String, kind: PublishKind = .interests, targets: [String] = ["news"]) -> PublishJob {
        PublishJob(
            instanceID: instance, publishID: id, kind: kind, targets: targets, payload: Data("payload-\(id)".utf8),
            webhookURL: "http://127.0.0.1:1/hook", createdAt: clock.now)
    }

    @Test(arguments: ContractBackend.selected)
    func testEnqueuedJobIsClaimedWithItsPayload(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let job = publish("p1", targets: ["a", "b"])
        let id = try await store.enqueuePublish(job)
        let depth = try await store.queueDepth()
        #expect(depth == 1)
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(claimed?.id == id)
        #expect(claimed?.job == job)
        #expect(claimed?.cursor == 0)
        #expect(claimed?.attempt == 1)
        #expect(claimed?.counters == [:])
        #expect(claimed?.leaseExpiresAt == clock.now.addingTimeInterval(30))
        let status = try await store.publishStatus(instanceID: instance, publishID: "p1")
        #expect(status?.state == .running)
        #expect(status?.startedAt == clock.now)
        try await store.close()
    }

    /// A channels (broadcast) publish is a job kind of its own: claimed and read back as `channels`, and its
    /// targets are the empty last page (the channels are in the payload, which only the engine reads), even when
    /// the instance has devices.
    @Test(arguments: ContractBackend.selected)
    func testChannelsPublishKeepsItsKindAndHasNoTargets(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        _ = try await store.registerDevice(DeviceRegistration(instanceID: instance, token: token(1)))
        let job = publish("pubid-channels-1", kind: .channels, targets: [])
        _ = try await store.enqueuePublish(job)
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(claimed?.job == job)
        let page = try await store.targets(for: job, after: 0, limit: 10)
        #expect(page == TargetPage(targets: [], cursor: 0, isLast: true))
        let status = try await store.publishStatus(instanceID: instance, publishID: "pubid-channels-1")
        #expect(status?.kind == .channels)
        try await store.close()
    }

    /// The trace context of the request that accepted a publish is claimed with the job, so the node that runs it
    /// continues the trace; a job without one claims nil.
    @Test(arguments: ContractBackend.selected)
    func testTraceContextIsStoredWithTheJobAndClaimedWithIt(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        var traced = publish("traced")
        traced.traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        traced.traceState = "vendor=x,other=y"
        _ = try await store.enqueuePublish(traced)
        _ = try await store.enqueuePublish(publish("plain"))
        let first = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(first?.job.traceParent == traced.traceParent)
        #expect(first?.job.traceState == "vendor=x,other=y")
        let second = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(second?.job.publishID == "plain")
        #expect(second?.job.traceParent == nil)
        #expect(second?.job.traceState == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDuplicatePublishIDIsRefusedPerInstance(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        _ = try await store.enqueuePublish(publish("p1"))
        let again = publish("p1")
        await #expect(throws: PushStoreError.duplicatePublish(publishID: "p1")) {
            _ = try await store.enqueuePublish(again)
        }
        var other = publish("p1")
        other.instanceID = "another-instance"
        _ = try await store.enqueuePublish(other)
        let depth = try await store.queueDepth()
        #expect(depth == 2)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testClaimsOldestFirstAndSkipsLeasedJobs(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let big = try await store.enqueuePublish(publish("big"))
        clock.advance(1)
        let small = try await store.enqueuePublish(publish("small"))
        let first = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        let second = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        let third = try await store.claimJob(workerID: "w3", leaseDuration: lease, now: clock.now)
        #expect(first?.id == big)
        #expect(second?.id == small, "a running job must not block the next one")
        #expect(third == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testClaimPrefersTheInstanceWithFewestRunsOnTheNodeThenTheOldest(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
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
        #expect(first?.id == b1, "the only instance with no run on the node goes first, though its job is newest")
        let second = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: node)
        #expect(second?.id == c1, "then the instance with fewer runs")
        let floor = ClaimPreference(runsByInstance: ["busy": 8, "some": 1], onlyAbsentInstances: true)
        let none = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: floor)
        #expect(none == nil, "a floor claim takes no job of an instance running here")
        let third = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: node)
        #expect(third?.id == a1, "among one instance's jobs, the oldest")
        let fourth = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(fourth?.id == a2)
        try await store.close()
    }

    /// A ranked claim takes each instance's oldest claimable job: it passes over a job running under a live lease
    /// and one scheduled for later, and takes back a job whose lease ran out, after the instance with fewer runs.
    @Test(arguments: ContractBackend.selected)
    func testRankedClaimSkipsRunningAndScheduledJobsAndTakesAnExpiredLease(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        func enqueue(_ id: String, of instanceID: String, notBefore: Date? = nil) async throws -> PublishJobID {
            var job = publish(id)
            job.instanceID = instanceID
            job.notBefore = notBefore
            clock.advance(1)
            return try await store.enqueuePublish(job)
        }
        let o1 = try await enqueue("o1", of: "other")
        let b1 = try await enqueue("b1", of: "busy")
        _ = try await enqueue("b2", of: "busy", notBefore: clock.now.addingTimeInterval(3_600))
        let b3 = try await enqueue("b3", of: "busy")
        let short = try await store.claimJob(workerID: "w2", leaseDuration: .seconds(1), now: clock.now)
        #expect(short?.id == o1)
        let running = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(running?.id == b1)
        clock.advance(2)
        let node = ClaimPreference(runsByInstance: ["busy": 1, "other": 2])
        let first = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: node)
        #expect(first?.id == b3, "the fewer runs first: not b1 (running) nor b2 (not due yet)")
        let second = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: node)
        #expect(second?.id == o1, "then the other instance's job whose lease ran out")
        #expect(second?.attempt == 2)
        let none = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now, preference: node)
        #expect(none == nil)
        try await store.close()
    }

    /// `publishCounters` is the status's counters (SQLite reads only those, for a run's summary): every
    /// checkpoint's added up, the publish's own, empty before any and for an unknown publish.
    @Test(arguments: ContractBackend.selected)
    func testPublishCountersAreTheStatusCounters(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let id = try await store.enqueuePublish(publish("p1"))
        _ = try await store.enqueuePublish(publish("p2"))
        let fresh = try await store.publishCounters(instanceID: instance, publishID: "p1")
        #expect(fresh == [:])
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(
            id, workerID: "w1", cursor: 2, counters: [.accepted(.apns): 2, .targets: 2], deviceResults: [])
        try await store.checkpoint(
            id, workerID: "w1", cursor: 3, counters: [.accepted(.apns): 1, .targets: 1], deviceResults: [])
        let counters = try await store.publishCounters(instanceID: instance, publishID: "p1")
        #expect(counters == [.accepted(.apns): 3, .targets: 3])
        let status = try await store.publishStatus(instanceID: instance, publishID: "p1")
        #expect(counters == status?.counters)
        let other = try await store.publishCounters(instanceID: instance, publishID: "p2")
        #expect(other == [:], "another publish's counters are its own")
        let unknown = try await store.publishCounters(instanceID: instance, publishID: "nope")
        #expect(unknown == [:])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testLeaseHolderOnlyMayCheckpointRenewOrFinish(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let id = try await store.enqueuePublish(publish("p1"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        await #expect(throws: PushStoreError.leaseLost(id)) {
            try await store.checkpoint(
                id, workerID: "w2", cursor: 5, counters: [.accepted(.apns): 1], deviceResults: [])
        }
        await #expect(throws: PushStoreError.leaseLost(id)) {
            try await store.renewLease(id, workerID: "w2", leaseDuration: self.lease, now: self.clock.now)
        }
        // The lease expires and another worker takes over: the first one is locked out.
        clock.advance(31)
        let takeover = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(takeover?.attempt == 2)
        await #expect(throws: PushStoreError.leaseLost(id)) {
            try await store.finishJob(
                id, workerID: "w1", state: .finished, targetsTotal: 0, summary: nil, now: self.clock.now)
        }
        try await store.renewLease(id, workerID: "w2", leaseDuration: lease, now: clock.now)
        try await store.finishJob(
            id, workerID: "w2", state: .finished, targetsTotal: 0, summary: "done", now: clock.now)
        await #expect(throws: PushStoreError.leaseLost(id)) {
            try await store.checkpoint(id, workerID: "w2", cursor: 9, counters: [:], deviceResults: [])
        }
        let status = try await store.publishStatus(instanceID: instance, publishID: "p1")
        #expect(status?.counters == [:], "a refused checkpoint changes nothing")
        #expect(status?.state == .finished)
        #expect(status?.summary == "done")
        let depth = try await store.queueDepth()
        #expect(depth == 0)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testRenewedLeaseIsNotClaimable(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        _ = try await store.enqueuePublish(publish("p1"))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)!
        clock.advance(20)
        try await store.renewLease(claimed.id, workerID: "w1", leaseDuration: lease, now: clock.now)
        clock.advance(20)
        let stolen = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(stolen == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testAnsweredTargetsAboveTheCursorAreRememberedUntilTheCursorPassesThem(_ backend: ContractBackend) async throws
    {
        let store = try await openStore(backend)
        let id = try await store.enqueuePublish(publish("p1"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(
            id, workerID: "w1", cursor: 3, counters: [:], deviceResults: [], answered: [2, 5, 9])
        var answered = try await store.answeredTargets(id)
        #expect(answered == [5, 9], "refs at or below the cursor need no memory")
        try await store.checkpoint(id, workerID: "w1", cursor: 6, counters: [:], deviceResults: [], answered: [12])
        answered = try await store.answeredTargets(id)
        #expect(answered == [9, 12])
        // A crash: the next worker sees the same set.
        clock.advance(31)
        let resumed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(resumed?.cursor == 6)
        answered = try await store.answeredTargets(id)
        #expect(answered == [9, 12])
        try await store.finishJob(id, workerID: "w2", state: .finished, targetsTotal: 0, summary: nil, now: clock.now)
        answered = try await store.answeredTargets(id)
        #expect(answered == [], "a finished job keeps no progress rows")
        try await store.close()
    }

    /// A store holding publish "p1", claimed by worker "w1".
    private func openClaimed(_ backend: ContractBackend) async throws -> (any PushStorage, PublishJobID) {
        let store = try await openStore(backend)
        let id = try await store.enqueuePublish(publish("p1"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        return (store, id)
    }

    /// A checkpoint of `job` by `worker` at `cursor` with `answered` and nothing else, then the answered set.
    private func checkpointAnswered(
        _ store: any PushStorage, _ job: PublishJobID, worker: String = "w1", cursor: Int64, _ answered: [Int64]
    ) async throws -> Set<Int64> {
        try await store.checkpoint(
            job, workerID: worker, cursor: cursor, counters: [:], deviceResults: [], answered: answered)
        return try await store.answeredTargets(job)
    }

    @Test(arguments: ContractBackend.selected)
    func testAnsweredRefsWithHolesAcrossCheckpointsAreRememberedExactly(_ backend: ContractBackend) async throws {
        let (store, id) = try await openClaimed(backend)
        // Out of order, with holes: runs of consecutive refs next to single refs, a hole filled later.
        var answered = try await checkpointAnswered(store, id, cursor: 1, [8, 2, 3, 4, 10, 7, 30])
        #expect(answered == [2, 3, 4, 7, 8, 10, 30])
        answered = try await checkpointAnswered(store, id, cursor: 1, [14, 12, 13, 5, 31, 29])
        #expect(answered == [2, 3, 4, 5, 7, 8, 10, 12, 13, 14, 29, 30, 31])
        answered = try await checkpointAnswered(store, id, cursor: 1, [9, 11])
        #expect(answered == Set(2...14).subtracting([6]).union(29...31), "6 was never answered")
        answered = try await checkpointAnswered(store, id, cursor: 6, [6])
        #expect(answered == Set(7...14).union(29...31))
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testOverlappingAndRepeatedAnsweredRefsCountOnceAndNoneIsLost(_ backend: ContractBackend) async throws {
        let (store, id) = try await openClaimed(backend)
        var answered = try await checkpointAnswered(store, id, cursor: 0, [5, 6, 7])
        #expect(answered == Set(5...7))
        // The same batch again with more answers (a write retried after its COMMIT's answer was lost): same start,
        // a longer run.
        answered = try await checkpointAnswered(store, id, cursor: 0, [5, 6, 7, 8, 9, 7])
        #expect(answered == Set(5...9))
        // A shorter run from the same start must not shorten the longer one; runs inside and across it add nothing.
        answered = try await checkpointAnswered(store, id, cursor: 0, [5])
        #expect(answered == Set(5...9))
        answered = try await checkpointAnswered(store, id, cursor: 0, [6, 7, 6])
        #expect(answered == Set(5...9))
        answered = try await checkpointAnswered(store, id, cursor: 0, [3, 4, 5, 6, 11])
        #expect(answered == Set(3...9).union([11]))
        answered = try await checkpointAnswered(store, id, cursor: 7, [])
        #expect(answered == [8, 9, 11])
        answered = try await checkpointAnswered(store, id, cursor: 10, [10])
        #expect(answered == [11])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testACursorInsideARunKeepsOnlyTheRefsAboveItUntilItPassesTheRun(_ backend: ContractBackend) async throws {
        let (store, id) = try await openClaimed(backend)
        var answered = try await checkpointAnswered(store, id, cursor: 2, Array(10...20) + [22, 23])
        #expect(answered == Set(10...20).union([22, 23]))
        answered = try await checkpointAnswered(store, id, cursor: 15, [])
        #expect(answered == Set(16...20).union([22, 23]), "refs at or below the cursor are not handed out")
        // A crash: the next worker resumes at the cursor and skips exactly the refs above it.
        clock.advance(31)
        let resumed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(resumed?.cursor == 15)
        answered = try await store.answeredTargets(id)
        #expect(answered == Set(16...20).union([22, 23]))
        // Covered whole: nothing of the run is left, and a ref answered later is remembered on its own.
        answered = try await checkpointAnswered(store, id, worker: "w2", cursor: 20, [25])
        #expect(answered == [22, 23, 25])
        answered = try await checkpointAnswered(store, id, worker: "w2", cursor: 23, [])
        #expect(answered == [25])
        try await store.finishJob(id, workerID: "w2", state: .finished, targetsTotal: 0, summary: nil, now: clock.now)
        answered = try await store.answeredTargets(id)
        #expect(answered == [], "a finished job keeps no progress rows")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testAnsweredRefsAboveTheCursorSurviveAReopenExactly(_ backend: ContractBackend) async throws {
        let (first, id) = try await openClaimed(backend)
        var store = first
        var expected = Set<Int64>()
        for batch in 0..<6 {
            // Interleaved batches, as answers from several connections come back: every third ref is answered a
            // batch later than its neighbours, and 1 in 7 never.
            let refs = (Int64(batch) * 40 + 1...Int64(batch) * 40 + 40).filter { $0 % 7 != 0 }
            _ = try await checkpointAnswered(store, id, cursor: Int64(batch) * 20, refs.filter { $0 % 3 != 0 })
            _ = try await checkpointAnswered(store, id, cursor: Int64(batch) * 20, refs.filter { $0 % 3 == 0 })
            expected.formUnion(refs)
        }
        // Worker w1 dies: the store goes away with its last checkpoint at cursor 100.
        try await store.close()
        store = try await openStore(backend)
        clock.advance(31)
        let resumed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(resumed?.cursor == 100)
        let answered = try await store.answeredTargets(id)
        #expect(answered == expected.filter { $0 > 100 })
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testCheckpointAddsCountersKeepsCursorMonotonicAndAppliesResults(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "news")
        let id = try await store.enqueuePublish(publish("p1"))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)!
        let target = try await store.targets(for: claimed.job, after: claimed.cursor, limit: 10).targets[0]
        clock.advance(1)
        try await store.checkpoint(
            id, workerID: "w1", cursor: 10,
            counters: [.accepted(.apns): 3, .failed(.apns, reason: "BadDeviceToken"): 1],
            deviceResults: [
                DeviceResult(
                    device: target.ref, status: 400, reason: "BadDeviceToken", at: clock.now, effect: .badToken)
            ])
        try await store.checkpoint(
            id, workerID: "w1", cursor: 4, counters: [.accepted(.apns): 2, .environmentRetries: 0], deviceResults: [])
        clock.advance(31)
        let resumed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(resumed?.cursor == 10)
        #expect(resumed?.counters == [.accepted(.apns): 5, .failed(.apns, reason: "BadDeviceToken"): 1])
        let stored = try await store.device(instanceID: instance, id: device.id)
        #expect(stored?.invalidatedAt != nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testCrashedJobResumesFromCheckpointAfterReopenAndLeaseExpiry(_ backend: ContractBackend) async throws {
        var store = try await openStore(backend)
        var expected: [String] = []
        for n in 0..<25 {
            let device = try await register(store, n)
            _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: n % 2 == 0 ? "a" : "b")
            expected.append(device.token)
        }
        let id = try await store.enqueuePublish(publish("p1", targets: ["a", "b"]))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)!
        let page = try await store.targets(for: claimed.job, after: claimed.cursor, limit: 10)
        try await store.checkpoint(
            id, workerID: "w1", cursor: page.cursor, counters: [.accepted(.apns): 10], deviceResults: [])
        // Worker w1 dies here: the store goes away without finishing the job.
        try await store.close()

        store = try await openStore(backend)
        clock.advance(10)
        let early = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(early == nil, "the lease of the crashed worker has not expired yet")
        clock.advance(21)
        let resumed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(resumed?.id == id)
        #expect(resumed?.attempt == 2)
        #expect(resumed?.cursor == page.cursor)
        #expect(resumed?.counters == [.accepted(.apns): 10])
        var rest: [String] = []
        var cursor = resumed!.cursor
        while true {
            let next = try await store.targets(for: resumed!.job, after: cursor, limit: 4)
            rest += next.targets.map(\.token)
            cursor = next.cursor
            if next.isLast { break }
        }
        #expect(page.targets.map(\.token) + rest == expected, "resumed without skipping or repeating a device")
        try await store.checkpoint(
            id, workerID: "w2", cursor: cursor, counters: [.accepted(.apns): 15], deviceResults: [])
        try await store.finishJob(id, workerID: "w2", state: .finished, targetsTotal: 25, summary: nil, now: clock.now)
        let status = try await store.publishStatus(instanceID: instance, publishID: "p1")
        #expect(status?.state == .finished)
        #expect(status?.counters == [.accepted(.apns): 25])
        #expect(status?.targetsTotal == 25)
        #expect(status?.attempts == 2)
        #expect(status?.finishedAt == clock.now)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testConcurrentEnqueuesAreAllCommittedAndSurviveReopen(_ backend: ContractBackend) async throws {
        let first = try await openStore(backend)
        let ids = try await withThrowingTaskGroup(of: PublishJobID.self) { [first] group in
            for job in (0..<1000).map({ publish("p\($0)") }) {
                group.addTask { try await first.enqueuePublish(job) }
            }
            return try await group.reduce(into: Set<PublishJobID>()) { $0.insert($1) }
        }
        #expect(ids.count == 1000)
        try await first.close()

        let store = try await openStore(backend)
        let depth = try await store.queueDepth()
        #expect(depth == 1000)
        let status = try await store.publishStatus(instanceID: instance, publishID: "p999")
        #expect(status?.state == .queued)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testAFailedWriteDoesNotUndoConcurrentWrites(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        _ = try await store.enqueuePublish(publish("dup"))
        let (x1, dup, x2) = (publish("x1"), publish("dup"), publish("x2"))
        async let a = store.enqueuePublish(x1)
        async let b = store.enqueuePublish(dup)
        async let c = store.enqueuePublish(x2)
        _ = try await a
        _ = try await c
        do {
            _ = try await b
            Issue.record("duplicate accepted")
        } catch {
            #expect((error as? PushStoreError) == .duplicatePublish(publishID: "dup"))
        }
        let depth = try await store.queueDepth()
        #expect(depth == 3)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testRecentPublishesNewestFirstWithCounters(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        for n in 0..<5 {
            _ = try await store.enqueuePublish(publish("p\(n)"))
            clock.advance(1)
        }
        var other = publish("elsewhere")
        other.instanceID = "another-instance"
        _ = try await store.enqueuePublish(other)
        let recent = try await store.recentPublishes(instanceID: instance, limit: 3)
        #expect(recent.map(\.publishID) == ["p4", "p3", "p2"])
        #expect(recent.allSatisfy { $0.state == .queued && $0.startedAt == nil })
        let missing = try await store.publishStatus(instanceID: instance, publishID: "nope")
        #expect(missing == nil)
        try await store.close()
    }
}
