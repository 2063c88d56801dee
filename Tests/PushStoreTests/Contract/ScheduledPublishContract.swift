import Foundation
import PushStore
import Testing

/// Scheduled publishes (`notBefore`, `nextPublishDue`, `rescheduleJob`), cancelling (`cancelPublish`), the
/// `cancelled` and `expired` end states, and device time zones carried by targets.
final class ScheduledPublishContract: StoreContract {
    let lease = Duration.seconds(30)

    func publish(_ id: String, notBefore: Date? = nil) -> PublishJob {
        PublishJob(
            instanceID: instance, publishID: id, kind: .interests, targets: ["news"],
            payload: Data("payload-\(id)".utf8), createdAt: clock.now, notBefore: notBefore)
    }

    @Test(arguments: ContractBackend.selected)
    func testScheduledJobIsNotClaimableBeforeItsTimeAndIsReportedAsNextDue(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let later = clock.now.addingTimeInterval(120)
        let soon = clock.now.addingTimeInterval(60)
        let scheduledLater = try await store.enqueuePublish(publish("later", notBefore: later))
        let scheduledSoon = try await store.enqueuePublish(publish("soon", notBefore: soon))
        let nothingYet = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(3600), now: clock.now)
        #expect(nothingYet == nil, "a scheduled job is not claimable before its time")
        let due = try await store.nextPublishDue(now: clock.now)
        #expect(due == soon)
        let status = try await store.publishStatus(instanceID: instance, publishID: "later")
        #expect(status?.state == .queued)
        #expect(status?.notBefore == later)
        let value1 = try await store.queueDepth()
        #expect(value1 == 2)

        // An unscheduled job enqueued after them is claimed at once; the scheduled ones keep waiting.
        let now = try await store.enqueuePublish(publish("now"))
        let first = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(3600), now: clock.now)
        #expect(first?.id == now)

        clock.advance(60)
        let atSoon = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(3600), now: clock.now)
        #expect(atSoon?.id == scheduledSoon)
        #expect(atSoon?.job.notBefore == soon)
        let dueAfter = try await store.nextPublishDue(now: clock.now)
        #expect(dueAfter == later)
        let value2 = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(3600), now: clock.now)
        #expect(value2 == nil)

        // A restart keeps the schedule.
        try await store.close()
        let reopened = try await openStore(backend)
        let value3 = try await reopened.nextPublishDue(now: clock.now)
        #expect(value3 == later)
        clock.advance(60)
        let atLater = try await reopened.claimJob(workerID: "w2", leaseDuration: .seconds(3600), now: clock.now)
        #expect(atLater?.id == scheduledLater)
        let value4 = try await reopened.nextPublishDue(now: clock.now)
        #expect(value4 == nil)
        try await reopened.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testCancellingAQueuedPublishEndsItAndARunningOneIsMarkedForItsWorker(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        _ = try await store.enqueuePublish(publish("scheduled", notBefore: clock.now.addingTimeInterval(60)))
        let cancelled = try await store.cancelPublish(instanceID: instance, publishID: "scheduled", now: clock.now)
        guard case .cancelled(let status)? = cancelled else {
            Issue.record("expected .cancelled, got \(String(describing: cancelled))"); return
        }
        #expect(status.state == .cancelled)
        #expect(status.finishedAt == clock.now)
        clock.advance(120)
        let value5 = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(value5 == nil, "a cancelled publish is never claimed")
        let value6 = try await store.nextPublishDue(now: clock.now.addingTimeInterval(-200))
        #expect(value6 == nil)
        let value7 = try await store.queueDepth()
        #expect(value7 == 0)

        let running = try await store.enqueuePublish(publish("running"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(
            running, workerID: "w1", cursor: 3, counters: [.accepted(.apns): 3], deviceResults: [])
        let marked = try await store.cancelPublish(instanceID: instance, publishID: "running", now: clock.now)
        #expect(marked == .running(running))
        let whileRunning = try await store.publishStatus(instanceID: instance, publishID: "running")
        #expect(whileRunning?.state == .running)
        #expect(whileRunning?.cancelRequested == true)
        // The worker died: the next claimant learns of the cancellation and ends the job.
        clock.advance(31)
        let reclaimed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(reclaimed?.id == running)
        #expect(reclaimed?.cancelRequested == true)
        try await store.finishJob(
            running, workerID: "w2", state: .cancelled, targetsTotal: 3, summary: nil, now: clock.now)
        let ended = try await store.cancelPublish(instanceID: instance, publishID: "running", now: clock.now)
        guard case .alreadyEnded(let final)? = ended else {
            Issue.record("expected .alreadyEnded, got \(String(describing: ended))"); return
        }
        #expect(final.state == .cancelled)
        #expect(final.counters[.accepted(.apns)] == 3)
        #expect(final.targetsTotal == 3)

        let unknown = try await store.cancelPublish(instanceID: instance, publishID: "never-made", now: clock.now)
        #expect(unknown == nil)
        let otherInstance = try await store.cancelPublish(
            instanceID: "another-instance", publishID: "running", now: clock.now)
        #expect(otherInstance == nil, "publishes are scoped by instance")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testRenewingALeaseTellsItsHolderOfACancelMadeElsewhere(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let id = try await store.enqueuePublish(publish("elsewhere"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        let before = try await store.renewLease(id, workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(!before)
        // Another node's API marks it; the holder learns of it at its next renewal, which still extends the lease
        // so that the holder can end the job itself.
        let marked = try await store.cancelPublish(instanceID: instance, publishID: "elsewhere", now: clock.now)
        #expect(marked == .running(id))
        clock.advance(20)
        let after = try await store.renewLease(id, workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(after)
        clock.advance(20)
        let stillHeld = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        #expect(stillHeld == nil, "the renewal extended the lease")
        await #expect(throws: PushStoreError.leaseLost(id)) {
            try await store.renewLease(id, workerID: "w2", leaseDuration: self.lease, now: self.clock.now)
        }
        try await store.finishJob(id, workerID: "w1", state: .cancelled, targetsTotal: 0, summary: nil, now: clock.now)
        let status = try await store.publishStatus(instanceID: instance, publishID: "elsewhere")
        #expect(status?.state == .cancelled)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testRescheduleRestartsTheCursorKeepsCountersAndWaitsForItsTime(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let id = try await store.enqueuePublish(publish("rounds"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(
            id, workerID: "w1", cursor: 10, counters: [.targets: 4], deviceResults: [],
            answered: [12, 15])
        await #expect(throws: PushStoreError.leaseLost(id)) {
            try await store.rescheduleJob(id, workerID: "w2", notBefore: self.clock.now)
        }
        let next = clock.now.addingTimeInterval(3600)
        try await store.rescheduleJob(id, workerID: "w1", notBefore: next)
        let status = try await store.publishStatus(instanceID: instance, publishID: "rounds")
        #expect(status?.state == .queued)
        #expect(status?.notBefore == next)
        let value8 = try await store.answeredTargets(id)
        #expect(value8 == [])
        let value9 = try await store.nextPublishDue(now: clock.now)
        #expect(value9 == next)
        let value10 = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(value10 == nil)
        await #expect(throws: PushStoreError.leaseLost(id)) {
            try await store.checkpoint(id, workerID: "w1", cursor: 11, counters: [:], deviceResults: [])
        }
        clock.advance(3600)
        let round = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        #expect(round?.cursor == 0)
        #expect(round?.counters == [.targets: 4])
        #expect(round?.attempt == 2)
        #expect(round?.job.notBefore == next)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testExpiredAndCancelledEndStatesSurviveReopeningAndAreCountedByState(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        for name in ["expired", "cancelled", "finished"] {
            _ = try await store.enqueuePublish(publish(name))
        }
        for state in [PublishState.expired, .cancelled, .finished] {
            let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
            let job = try #require(claimed)
            try await store.finishJob(
                job.id, workerID: "w1", state: state, targetsTotal: 0,
                summary: state == .expired ? "window closed" : nil, now: clock.now)
        }
        try await store.close()
        let reopened = try await openStore(backend)
        for (name, state) in [("expired", PublishState.expired), ("cancelled", .cancelled), ("finished", .finished)] {
            let status = try await reopened.publishStatus(instanceID: instance, publishID: name)
            #expect(status?.state == state, Comment(rawValue: name))
            #expect(status?.finishedAt == clock.now, Comment(rawValue: name))
        }
        let statistics = try await reopened.statistics(instanceID: instance, since: clock.now.addingTimeInterval(-1))
        #expect(statistics.publishesByState == [.expired: 1, .cancelled: 1, .finished: 1])
        let value11 = try await reopened.queueDepth()
        #expect(value11 == 0)
        try await reopened.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDeviceTimeZoneIsKeptByReRegistrationAndCarriedByTargets(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let zoned = try await register(store, 1)
        let plain = try await register(store, 2)
        for device in [zoned, plain] {
            _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["news"])
            _ = try await store.setUser(
                instanceID: instance, deviceID: device.id, userID: "u-\(device.id)",
                maxDevicesPerUser: 10)
        }
        let value12 = try await store.updateTimeZone(
            instanceID: instance, deviceID: zoned.id, timeZone: "Asia/Kathmandu")
        #expect(value12)
        let value13 = try await store.updateTimeZone(instanceID: instance, deviceID: "apns-unknown", timeZone: "UTC")
        #expect(!value13)
        let value14 = try await store.updateTimeZone(
            instanceID: "another-instance", deviceID: zoned.id, timeZone: "UTC")
        #expect(!value14)
        _ = try await register(store, 1)
        let value15 = try await store.device(instanceID: instance, id: zoned.id)?.timeZone
        #expect(value15 == "Asia/Kathmandu")
        let value16 = try await store.device(instanceID: instance, id: plain.id)?.timeZone
        #expect(value16 == nil)

        let interests = try await store.targets(for: publish("p"), after: 0, limit: 10)
        #expect(interests.targets.map(\.timeZone) == ["Asia/Kathmandu", nil])
        let users = PublishJob(
            instanceID: instance, publishID: "u", kind: .users,
            targets: ["u-\(zoned.id)", "u-\(plain.id)"], payload: Data(), createdAt: clock.now)
        let userTargets = try await store.targets(for: users, after: 0, limit: 10)
        #expect(userTargets.targets.map(\.timeZone) == ["Asia/Kathmandu", nil])

        let value17 = try await store.updateTimeZone(instanceID: instance, deviceID: zoned.id, timeZone: nil)
        #expect(value17)
        try await store.close()
        let reopened = try await openStore(backend)
        let value18 = try await reopened.device(instanceID: instance, id: zoned.id)?.timeZone
        #expect(value18 == nil)
        try await reopened.close()
    }
}
