import Foundation
import PushStore
import Testing

final class RetentionContract: StoreContract {
    @Test(arguments: ContractBackend.selected)
    func testDevicesNobodyDeliveredToExpireWhenTheyHaveNotRegisteredAgain(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let start = clock.now
        let never = try await register(store, 1)
        let delivered = try await register(store, 2)
        let failed = try await register(store, 3)
        let returning = try await register(store, 5)
        for device in [never, delivered, failed, returning] {
            _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "a")
        }
        _ = try await store.setUser(instanceID: instance, deviceID: never.id, userID: "u", maxDevicesPerUser: 10)
        let refs = try await store.targets(
            for: PublishJob(
                instanceID: instance, publishID: "x", kind: .interests, targets: ["a"], payload: Data(),
                createdAt: start), after: 0, limit: 10
        ).targets.map(\.ref)
        #expect(refs.count == 4)
        clock.advance(1)
        // Targets come in registration order: never, delivered, failed, returning.
        try await store.recordDeviceResults([
            DeviceResult(device: refs[1], status: 200, at: clock.now),
            DeviceResult(device: refs[2], status: 0, reason: "TransportError", at: clock.now),
        ])
        clock.advance(100)
        _ = try await register(store, 5)  // the app launched again
        let recent = try await register(store, 6)
        let cutoff = clock.now.addingTimeInterval(-10)

        let first = try await store.purgeUndeliveredDevices(registeredBefore: cutoff, limit: 1)
        #expect(first == 1, "bounded slices")
        let second = try await store.purgeUndeliveredDevices(registeredBefore: cutoff, limit: 10)
        #expect(second == 1)
        let third = try await store.purgeUndeliveredDevices(registeredBefore: cutoff, limit: 10)
        #expect(third == 0)
        for (device, kept) in [(never, false), (delivered, true), (failed, false), (returning, true), (recent, true)] {
            let found = try await store.device(instanceID: instance, id: device.id)
            #expect((found != nil) == kept, "\(device.token)")
        }
        let followers = try await store.subscriberCount(instanceID: instance, interest: "a")
        #expect(followers == 2, "the expired devices' interests went with them")
        let bound = try await store.targets(
            for: PublishJob(
                instanceID: instance, publishID: "y", kind: .users, targets: ["u"], payload: Data(),
                createdAt: start), after: 0, limit: 10
        ).targets
        #expect(bound.count == 0, "and their user binding")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testPurgeDeletesOnlyOldEndedHistoryInBoundedSlices(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let start = clock.now
        // Old history: a finished publish with counters, events, a delivered webhook, an invalidated device.
        let old = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "old", kind: .interests, targets: ["a"], payload: Data(),
                createdAt: start))
        _ = try await store.claimJob(workerID: "w", leaseDuration: .seconds(30), now: start)
        try await store.checkpoint(old, workerID: "w", cursor: 1, counters: [.accepted(.apns): 1], deviceResults: [])
        try await store.finishJob(old, workerID: "w", state: .finished, targetsTotal: 1, summary: nil, now: start)
        let events = (0..<3).map {
            ReportingEvent(
                instanceID: instance, publishID: "old", deviceID: "d\($0)", userID: nil, kind: .delivery, at: start)
        }
        _ = try await store.recordEvents(events)
        let hook = try await store.enqueueWebhook(WebhookRequest(url: "http://h", body: Data()), now: start)
        try await store.markWebhook(hook, outcome: .delivered, now: start)
        let dead = try await register(store, 1)
        _ = try await store.addInterest(instanceID: instance, deviceID: dead.id, interest: "a")
        _ = try await store.setUser(instanceID: instance, deviceID: dead.id, userID: "u", maxDevicesPerUser: 10)
        let deadRef = try await store.targets(
            for: PublishJob(
                instanceID: instance, publishID: "x", kind: .users, targets: ["u"], payload: Data(), createdAt: start),
            after: 0, limit: 1
        ).targets[0].ref
        clock.advance(1)
        try await store.recordDeviceResults([
            DeviceResult(device: deadRef, status: 410, at: clock.now, effect: .unregistered(since: clock.now))
        ])

        // Recent or live state that must survive.
        clock.advance(100)
        let live = try await register(store, 2)
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "queued", kind: .interests, targets: ["a"], payload: Data(),
                createdAt: start))
        _ = try await store.enqueueWebhook(WebhookRequest(url: "http://pending", body: Data()), now: start)

        let cutoff = clock.now.addingTimeInterval(-10)
        let first = try await store.purge(before: cutoff, limit: 2)
        #expect(first == PurgeResult(publishes: 1, events: 2, webhooks: 1, devices: 1))
        let second = try await store.purge(before: cutoff, limit: 2)
        #expect(second == PurgeResult(publishes: 0, events: 1, webhooks: 0, devices: 0))
        let third = try await store.purge(before: cutoff, limit: 2)
        #expect(third == PurgeResult())

        let oldStatus = try await store.publishStatus(instanceID: instance, publishID: "old")
        #expect(oldStatus == nil)
        let queued = try await store.publishStatus(instanceID: instance, publishID: "queued")
        #expect(queued?.state == .queued)
        let deadDevice = try await store.device(instanceID: instance, id: dead.id)
        #expect(deadDevice == nil)
        let liveDevice = try await store.device(instanceID: instance, id: live.id)
        #expect(liveDevice != nil)
        let pending = try await store.dueWebhooks(now: clock.now, limit: 10, leaseDuration: .seconds(1))
        #expect(pending.map(\.request.url) == ["http://pending"])
        try await store.close()
    }
}
