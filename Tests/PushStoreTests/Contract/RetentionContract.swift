import Foundation
import XCTest

import PushStore

final class RetentionContract: StoreContract {
    func testPurgeDeletesOnlyOldEndedHistoryInBoundedSlices() async throws {
        let store = try await openStore()
        let start = clock.now
        // Old history: a finished publish with counters, events, a delivered webhook, an invalidated device.
        let old = try await store.enqueuePublish(
            PublishJob(instanceID: instance, publishID: "old", kind: .interests, targets: ["a"], payload: Data(), createdAt: start))
        _ = try await store.claimJob(workerID: "w", leaseDuration: .seconds(30), now: start)
        try await store.checkpoint(old, workerID: "w", cursor: 1, counters: ["accepted": 1], deviceResults: [])
        try await store.finishJob(old, workerID: "w", state: .finished, targetsTotal: 1, summary: nil, now: start)
        let events = (0..<3).map {
            ReportingEvent(instanceID: instance, publishID: "old", deviceID: "d\($0)", userID: nil, kind: .delivery, at: start)
        }
        _ = try await store.recordEvents(events)
        let hook = try await store.enqueueWebhook(WebhookRequest(url: "http://h", body: Data()), now: start)
        try await store.markWebhook(hook, outcome: .delivered, now: start)
        let dead = try await register(store, 1)
        _ = try await store.addInterest(instanceID: instance, deviceID: dead.id, interest: "a")
        _ = try await store.setUser(instanceID: instance, deviceID: dead.id, userID: "u", maxDevicesPerUser: 10)
        let deadRef = try await store.targets(
            for: PublishJob(instanceID: instance, publishID: "x", kind: .users, targets: ["u"], payload: Data(), createdAt: start),
            after: 0, limit: 1
        ).targets[0].ref
        clock.advance(1)
        try await store.recordDeviceResults([DeviceResult(device: deadRef, status: 410, at: clock.now, effect: .unregistered(since: clock.now))])

        // Recent or live state that must survive.
        clock.advance(100)
        let live = try await register(store, 2)
        _ = try await store.enqueuePublish(
            PublishJob(instanceID: instance, publishID: "queued", kind: .interests, targets: ["a"], payload: Data(), createdAt: start))
        _ = try await store.enqueueWebhook(WebhookRequest(url: "http://pending", body: Data()), now: start)

        let cutoff = clock.now.addingTimeInterval(-10)
        let first = try await store.purge(before: cutoff, limit: 2)
        XCTAssertEqual(first, PurgeResult(publishes: 1, events: 2, webhooks: 1, devices: 1))
        let second = try await store.purge(before: cutoff, limit: 2)
        XCTAssertEqual(second, PurgeResult(publishes: 0, events: 1, webhooks: 0, devices: 0))
        let third = try await store.purge(before: cutoff, limit: 2)
        XCTAssertEqual(third, PurgeResult())

        let oldStatus = try await store.publishStatus(instanceID: instance, publishID: "old")
        XCTAssertNil(oldStatus)
        let queued = try await store.publishStatus(instanceID: instance, publishID: "queued")
        XCTAssertEqual(queued?.state, .queued)
        let deadDevice = try await store.device(instanceID: instance, id: dead.id)
        XCTAssertNil(deadDevice)
        let liveDevice = try await store.device(instanceID: instance, id: live.id)
        XCTAssertNotNil(liveDevice)
        let pending = try await store.dueWebhooks(now: clock.now, limit: 10, leaseDuration: .seconds(1))
        XCTAssertEqual(pending.map(\.request.url), ["http://pending"])
        try await store.close()
    }
}
