import Foundation
import PushStore
import Testing

/// The Beams bridge's outbox (`BeamsForwardQueue`) on the backends that have it (SQLite, PostgreSQL); the in-memory
/// fake has none, and its cases pass without checking.
final class BeamsForwardContract: StoreContract {
    private func queue(_ store: any PushStorage, on backend: ContractBackend) -> (any BeamsForwardQueue)? {
        guard let queue = store as? any BeamsForwardQueue else {
            #expect(backend == .inMemory, "SQLite and PostgreSQL keep the Beams bridge's outbox")
            return nil
        }
        return queue
    }

    private func job(_ publishID: String, body: String = #"{"interests":["a"]}"#) -> PublishJob {
        PublishJob(
            instanceID: instance, publishID: publishID, kind: .interests, targets: ["a"], payload: Data(),
            createdAt: clock.now,
            beamsForward: BeamsForward(
                instanceID: instance, kind: .publishInterests, key: publishID,
                body: Data(body.utf8)))
    }

    @Test(arguments: ContractBackend.selected)
    func testAPublishForwardCommitsWithItsJobAndIsClaimedOnceUntilItsLeaseEnds(_ backend: ContractBackend) async throws
    {
        let store = try await openStore(backend)
        guard let queue = queue(store, on: backend) else { return try await store.close() }
        _ = try await store.enqueuePublish(job("p1", body: #"{"interests":["a"],"apns":{}}"#))
        let record = try await queue.beamsForward(instanceID: instance, publishID: "p1")
        #expect(record?.state == .pending)
        #expect(record?.attempts == 0)
        let due = try await queue.dueBeamsForwards(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        #expect(
            due.map(\.forward) == [
                BeamsForward(
                    instanceID: instance, kind: .publishInterests, key: "p1",
                    body: Data(#"{"interests":["a"],"apns":{}}"#.utf8))
            ])
        let claimedAgain = try await queue.dueBeamsForwards(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        #expect(claimedAgain == [], "hidden while leased")
        let next = try await queue.nextBeamsForwardDue()
        #expect(next == clock.now.addingTimeInterval(60), "the lease's end")
        clock.advance(61)
        let afterLease = try await queue.dueBeamsForwards(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        #expect(afterLease.map(\.id) == due.map(\.id), "an unrecorded attempt is made again")
        try await queue.markBeamsForward(due[0].id, outcome: .delivered(upstreamID: "pubid-upstream"), now: clock.now)
        let delivered = try await queue.beamsForward(instanceID: instance, publishID: "p1")
        #expect(
            delivered
                == BeamsForwardRecord(
                    state: .delivered, attempts: 1, upstreamID: "pubid-upstream",
                    lastError: nil, createdAt: delivered!.createdAt, finishedAt: clock.now))
        let none = try await queue.nextBeamsForwardDue()
        #expect(none == nil)
        await #expect(throws: PushStoreError.notFound) {
            try await queue.markBeamsForward(due[0].id, outcome: .failed(error: "late"), now: self.clock.now)
        }
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testADuplicatePublishQueuesNoSecondForwardAndAPublishWithoutOneQueuesNone(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        guard let queue = queue(store, on: backend) else { return try await store.close() }
        _ = try await store.enqueuePublish(job("p1"))
        await #expect(throws: PushStoreError.duplicatePublish(publishID: "p1")) {
            _ = try await store.enqueuePublish(self.job("p1", body: "second"))
        }
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "p2", kind: .interests,
                targets: ["a"], payload: Data(), createdAt: clock.now))
        let due = try await queue.dueBeamsForwards(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        #expect(due.map(\.forward.key) == ["p1"])
        #expect(due.first?.forward.body == Data(#"{"interests":["a"]}"#.utf8))
        let noForward = try await queue.beamsForward(instanceID: instance, publishID: "p2")
        #expect(noForward == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testARetirementIsQueuedOncePerBeamsDeviceAndOutcomesMoveOrEndIt(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        guard let queue = queue(store, on: backend) else { return try await store.close() }
        let retire = BeamsForward(instanceID: instance, kind: .retireDevice, key: "apns/apns-1")
        let first = try await queue.enqueueBeamsForward(retire, now: clock.now)
        let second = try await queue.enqueueBeamsForward(retire, now: clock.now)
        #expect([first, second] == [true, false])
        var due = try await queue.dueBeamsForwards(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        #expect(due.map(\.forward) == [retire])
        #expect(due.first?.attempts == 0)
        try await queue.markBeamsForward(
            due[0].id, outcome: .retry(at: clock.now.addingTimeInterval(5), error: "HTTP 503"),
            now: clock.now)
        let next = try await queue.nextBeamsForwardDue()
        #expect(next == clock.now.addingTimeInterval(5))
        clock.advance(5)
        due = try await queue.dueBeamsForwards(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        #expect(due.first?.attempts == 1)
        try await queue.markBeamsForward(
            due[0].id, outcome: .deferred(until: clock.now.addingTimeInterval(1)), now: clock.now)
        clock.advance(1)
        due = try await queue.dueBeamsForwards(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        #expect(due.first?.attempts == 1, "a deferral spends no attempt")
        try await queue.markBeamsForward(due[0].id, outcome: .failed(error: "HTTP 400: Bad request"), now: clock.now)
        let none = try await queue.nextBeamsForwardDue()
        #expect(none == nil)
        let again = try await queue.enqueueBeamsForward(retire, now: clock.now)
        #expect(!again, "a failed retirement is not queued again by the next registration")
        // A scheduled publish's copy is due at the publish's start moment, queued now.
        var scheduled = job("p9")
        scheduled.notBefore = clock.now.addingTimeInterval(30)
        _ = try await store.enqueuePublish(scheduled)
        let early = try await queue.dueBeamsForwards(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        #expect(early == [])
        let dueAt = try await queue.nextBeamsForwardDue()
        #expect(dueAt == clock.now.addingTimeInterval(30))
        let queuedAt = try await queue.beamsForward(instanceID: instance, publishID: "p9")?.createdAt
        #expect(queuedAt == clock.now)
        try await store.close()
    }
}
