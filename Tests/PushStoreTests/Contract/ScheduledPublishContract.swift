import Foundation
import XCTest

import PushStore

/// Scheduled publishes (`notBefore`, `nextPublishDue`, `rescheduleJob`), cancelling (`cancelPublish`), the
/// `cancelled` and `expired` end states, and device time zones carried by targets.
final class ScheduledPublishContract: StoreContract {
    let lease = Duration.seconds(30)

    func publish(_ id: String, notBefore: Date? = nil) -> PublishJob {
        PublishJob(instanceID: instance, publishID: id, kind: .interests, targets: ["news"],
                   payload: Data("payload-\(id)".utf8), createdAt: clock.now, notBefore: notBefore)
    }

    func testScheduledJobIsNotClaimableBeforeItsTimeAndIsReportedAsNextDue() async throws {
        let store = try await openStore()
        let later = clock.now.addingTimeInterval(120)
        let soon = clock.now.addingTimeInterval(60)
        let scheduledLater = try await store.enqueuePublish(publish("later", notBefore: later))
        let scheduledSoon = try await store.enqueuePublish(publish("soon", notBefore: soon))
        let nothingYet = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(3600), now: clock.now)
        XCTAssertNil(nothingYet, "a scheduled job is not claimable before its time")
        let due = try await store.nextPublishDue(now: clock.now)
        XCTAssertEqual(due, soon)
        let status = try await store.publishStatus(instanceID: instance, publishID: "later")
        XCTAssertEqual(status?.state, .queued)
        XCTAssertEqual(status?.notBefore, later)
        let value1 = try await store.queueDepth()
        XCTAssertEqual(value1, 2)

        // An unscheduled job enqueued after them is claimed at once; the scheduled ones keep waiting.
        let now = try await store.enqueuePublish(publish("now"))
        let first = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(3600), now: clock.now)
        XCTAssertEqual(first?.id, now)

        clock.advance(60)
        let atSoon = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(3600), now: clock.now)
        XCTAssertEqual(atSoon?.id, scheduledSoon)
        XCTAssertEqual(atSoon?.job.notBefore, soon)
        let dueAfter = try await store.nextPublishDue(now: clock.now)
        XCTAssertEqual(dueAfter, later)
        let value2 = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(3600), now: clock.now)
        XCTAssertNil(value2)

        // A restart keeps the schedule.
        try await store.close()
        let reopened = try await openStore()
        let value3 = try await reopened.nextPublishDue(now: clock.now)
        XCTAssertEqual(value3, later)
        clock.advance(60)
        let atLater = try await reopened.claimJob(workerID: "w2", leaseDuration: .seconds(3600), now: clock.now)
        XCTAssertEqual(atLater?.id, scheduledLater)
        let value4 = try await reopened.nextPublishDue(now: clock.now)
        XCTAssertNil(value4)
        try await reopened.close()
    }

    func testCancellingAQueuedPublishEndsItAndARunningOneIsMarkedForItsWorker() async throws {
        let store = try await openStore()
        _ = try await store.enqueuePublish(publish("scheduled", notBefore: clock.now.addingTimeInterval(60)))
        let cancelled = try await store.cancelPublish(instanceID: instance, publishID: "scheduled", now: clock.now)
        guard case .cancelled(let status)? = cancelled else { return XCTFail("expected .cancelled, got \(String(describing: cancelled))") }
        XCTAssertEqual(status.state, .cancelled)
        XCTAssertEqual(status.finishedAt, clock.now)
        clock.advance(120)
        let value5 = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertNil(value5,
                     "a cancelled publish is never claimed")
        let value6 = try await store.nextPublishDue(now: clock.now.addingTimeInterval(-200))
        XCTAssertNil(value6)
        let value7 = try await store.queueDepth()
        XCTAssertEqual(value7, 0)

        let running = try await store.enqueuePublish(publish("running"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(running, workerID: "w1", cursor: 3, counters: [.accepted(.apns): 3], deviceResults: [])
        let marked = try await store.cancelPublish(instanceID: instance, publishID: "running", now: clock.now)
        XCTAssertEqual(marked, .running(running))
        let whileRunning = try await store.publishStatus(instanceID: instance, publishID: "running")
        XCTAssertEqual(whileRunning?.state, .running)
        XCTAssertEqual(whileRunning?.cancelRequested, true)
        // The worker died: the next claimant learns of the cancellation and ends the job.
        clock.advance(31)
        let reclaimed = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(reclaimed?.id, running)
        XCTAssertEqual(reclaimed?.cancelRequested, true)
        try await store.finishJob(running, workerID: "w2", state: .cancelled, targetsTotal: 3, summary: nil, now: clock.now)
        let ended = try await store.cancelPublish(instanceID: instance, publishID: "running", now: clock.now)
        guard case .alreadyEnded(let final)? = ended else { return XCTFail("expected .alreadyEnded, got \(String(describing: ended))") }
        XCTAssertEqual(final.state, .cancelled)
        XCTAssertEqual(final.counters[.accepted(.apns)], 3)
        XCTAssertEqual(final.targetsTotal, 3)

        let unknown = try await store.cancelPublish(instanceID: instance, publishID: "never-made", now: clock.now)
        XCTAssertNil(unknown)
        let otherInstance = try await store.cancelPublish(instanceID: "another-instance", publishID: "running", now: clock.now)
        XCTAssertNil(otherInstance, "publishes are scoped by instance")
        try await store.close()
    }

    func testRenewingALeaseTellsItsHolderOfACancelMadeElsewhere() async throws {
        let store = try await openStore()
        let id = try await store.enqueuePublish(publish("elsewhere"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        let before = try await store.renewLease(id, workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertFalse(before)
        // Another node's API marks it; the holder learns of it at its next renewal, which still extends the lease
        // so that the holder can end the job itself.
        let marked = try await store.cancelPublish(instanceID: instance, publishID: "elsewhere", now: clock.now)
        XCTAssertEqual(marked, .running(id))
        clock.advance(20)
        let after = try await store.renewLease(id, workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertTrue(after)
        clock.advance(20)
        let stillHeld = try await store.claimJob(workerID: "w2", leaseDuration: lease, now: clock.now)
        XCTAssertNil(stillHeld, "the renewal extended the lease")
        await XCTAssertThrowsAsync(PushStoreError.leaseLost(id)) {
            try await store.renewLease(id, workerID: "w2", leaseDuration: self.lease, now: self.clock.now)
        }
        try await store.finishJob(id, workerID: "w1", state: .cancelled, targetsTotal: 0, summary: nil, now: clock.now)
        let status = try await store.publishStatus(instanceID: instance, publishID: "elsewhere")
        XCTAssertEqual(status?.state, .cancelled)
        try await store.close()
    }

    func testRescheduleRestartsTheCursorKeepsCountersAndWaitsForItsTime() async throws {
        let store = try await openStore()
        let id = try await store.enqueuePublish(publish("rounds"))
        _ = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(id, workerID: "w1", cursor: 10, counters: [.targets: 4], deviceResults: [],
                                   answered: [12, 15])
        await XCTAssertThrowsAsync(PushStoreError.leaseLost(id)) {
            try await store.rescheduleJob(id, workerID: "w2", notBefore: self.clock.now)
        }
        let next = clock.now.addingTimeInterval(3600)
        try await store.rescheduleJob(id, workerID: "w1", notBefore: next)
        let status = try await store.publishStatus(instanceID: instance, publishID: "rounds")
        XCTAssertEqual(status?.state, .queued)
        XCTAssertEqual(status?.notBefore, next)
        let value8 = try await store.answeredTargets(id)
        XCTAssertEqual(value8, [])
        let value9 = try await store.nextPublishDue(now: clock.now)
        XCTAssertEqual(value9, next)
        let value10 = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertNil(value10)
        await XCTAssertThrowsAsync(PushStoreError.leaseLost(id)) {
            try await store.checkpoint(id, workerID: "w1", cursor: 11, counters: [:], deviceResults: [])
        }
        clock.advance(3600)
        let round = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
        XCTAssertEqual(round?.cursor, 0)
        XCTAssertEqual(round?.counters, [.targets: 4])
        XCTAssertEqual(round?.attempt, 2)
        XCTAssertEqual(round?.job.notBefore, next)
        try await store.close()
    }

    func testExpiredAndCancelledEndStatesSurviveReopeningAndAreCountedByState() async throws {
        let store = try await openStore()
        for name in ["expired", "cancelled", "finished"] {
            _ = try await store.enqueuePublish(publish(name))
        }
        for state in [PublishState.expired, .cancelled, .finished] {
            let claimed = try await store.claimJob(workerID: "w1", leaseDuration: lease, now: clock.now)
            let job = try XCTUnwrap(claimed)
            try await store.finishJob(job.id, workerID: "w1", state: state, targetsTotal: 0,
                                      summary: state == .expired ? "window closed" : nil, now: clock.now)
        }
        try await store.close()
        let reopened = try await openStore()
        for (name, state) in [("expired", PublishState.expired), ("cancelled", .cancelled), ("finished", .finished)] {
            let status = try await reopened.publishStatus(instanceID: instance, publishID: name)
            XCTAssertEqual(status?.state, state, name)
            XCTAssertEqual(status?.finishedAt, clock.now, name)
        }
        let statistics = try await reopened.statistics(instanceID: instance, since: clock.now.addingTimeInterval(-1))
        XCTAssertEqual(statistics.publishesByState, [.expired: 1, .cancelled: 1, .finished: 1])
        let value11 = try await reopened.queueDepth()
        XCTAssertEqual(value11, 0)
        try await reopened.close()
    }

    func testDeviceTimeZoneIsKeptByReRegistrationAndCarriedByTargets() async throws {
        let store = try await openStore()
        let zoned = try await register(store, 1)
        let plain = try await register(store, 2)
        for device in [zoned, plain] {
            _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["news"])
            _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "u-\(device.id)",
                                        maxDevicesPerUser: 10)
        }
        let value12 = try await store.updateTimeZone(instanceID: instance, deviceID: zoned.id, timeZone: "Asia/Kathmandu")
        XCTAssertTrue(value12)
        let value13 = try await store.updateTimeZone(instanceID: instance, deviceID: "apns-unknown", timeZone: "UTC")
        XCTAssertFalse(value13)
        let value14 = try await store.updateTimeZone(instanceID: "another-instance", deviceID: zoned.id, timeZone: "UTC")
        XCTAssertFalse(value14)
        _ = try await register(store, 1)
        let value15 = try await store.device(instanceID: instance, id: zoned.id)?.timeZone
        XCTAssertEqual(value15, "Asia/Kathmandu")
        let value16 = try await store.device(instanceID: instance, id: plain.id)?.timeZone
        XCTAssertNil(value16)

        let interests = try await store.targets(for: publish("p"), after: 0, limit: 10)
        XCTAssertEqual(interests.targets.map(\.timeZone), ["Asia/Kathmandu", nil])
        let users = PublishJob(instanceID: instance, publishID: "u", kind: .users,
                               targets: ["u-\(zoned.id)", "u-\(plain.id)"], payload: Data(), createdAt: clock.now)
        let userTargets = try await store.targets(for: users, after: 0, limit: 10)
        XCTAssertEqual(userTargets.targets.map(\.timeZone), ["Asia/Kathmandu", nil])

        let value17 = try await store.updateTimeZone(instanceID: instance, deviceID: zoned.id, timeZone: nil)
        XCTAssertTrue(value17)
        try await store.close()
        let reopened = try await openStore()
        let value18 = try await reopened.device(instanceID: instance, id: zoned.id)?.timeZone
        XCTAssertNil(value18)
        try await reopened.close()
    }
}
