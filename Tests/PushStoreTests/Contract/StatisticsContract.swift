import Foundation
import PushStore
import Testing

/// `statistics(instanceID:since:)`: what the console's overview counts.
final class StatisticsContract: StoreContract {
    private let lease: Duration = .seconds(30)

    @Test(arguments: ContractBackend.selected)
    func testCountsDevicesInvalidOnesAndTheInstanceOnly(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        for n in 1...3 { _ = try await register(store, n) }
        _ = try await store.registerDevice(
            DeviceRegistration(
                instanceID: instance, platform: .fcm, token: "fcm-token", environment: .production,
                environmentDeclared: false, bundleID: nil, metadata: "{}"))
        _ = try await store.registerDevice(
            DeviceRegistration(
                instanceID: "another-instance", token: token(9), environment: .production, environmentDeclared: false,
                bundleID: "com.example.app", metadata: "{}"))
        let dead = try await register(store, 1)
        let ref = try await refOf(store, dead)
        clock.advance(1)
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 400, reason: "BadDeviceToken", at: clock.now, effect: .badToken)
        ])

        let statistics = try await store.statistics(instanceID: instance, since: clock.now)
        #expect(statistics.devicesByPlatform == [.apns: 3, .fcm: 1])
        #expect(statistics.devices == 4)
        #expect(statistics.invalidDevices == 1)
        let other = try await store.statistics(instanceID: "another-instance", since: clock.now)
        #expect(other.devices == 1)
        #expect(other.invalidDevices == 0)
        let none = try await store.statistics(instanceID: "no-such-instance", since: clock.now)
        #expect(none == InstanceStatistics())
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testSumsTheCountersOfPublishesCreatedSinceTheGivenMoment(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let old = try await store.enqueuePublish(publish("old"))
        _ = try await store.claimJob(workerID: "w", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(old, workerID: "w", cursor: 1, counters: [.accepted(.apns): 100], deviceResults: [])
        try await store.finishJob(old, workerID: "w", state: .finished, targetsTotal: 100, summary: nil, now: clock.now)
        clock.advance(3600)
        let midnight = clock.now
        let first = try await store.enqueuePublish(publish("first"))
        _ = try await store.claimJob(workerID: "w", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(
            first, workerID: "w", cursor: 1,
            counters: [.accepted(.apns): 5, .failed(.apns, reason: "Unregistered"): 2], deviceResults: [])
        try await store.finishJob(first, workerID: "w", state: .finished, targetsTotal: 7, summary: nil, now: clock.now)
        let second = try await store.enqueuePublish(publish("second"))
        _ = try await store.claimJob(workerID: "w", leaseDuration: lease, now: clock.now)
        try await store.checkpoint(second, workerID: "w", cursor: 1, counters: [.accepted(.apns): 1], deviceResults: [])
        _ = try await store.enqueuePublish(publish("queued"))

        let statistics = try await store.statistics(instanceID: instance, since: midnight)
        #expect(statistics.publishesByState == [.finished: 1, .running: 1, .queued: 1])
        #expect(statistics.publishes == 3)
        #expect(statistics.counters == [.accepted(.apns): 6, .failed(.apns, reason: "Unregistered"): 2])
        try await store.close()
    }

    private func publish(_ id: String) -> PublishJob {
        PublishJob(
            instanceID: instance, publishID: id, kind: .interests, targets: ["news"], payload: Data("{}".utf8),
            createdAt: clock.now)
    }

    private func refOf(_ store: any PushStorage, _ device: Device) async throws -> Int64 {
        _ = try await store.setUser(
            instanceID: instance, deviceID: device.id, userID: "u-\(device.id)", maxDevicesPerUser: 100)
        let job = PublishJob(
            instanceID: instance, publishID: "ref", kind: .users, targets: ["u-\(device.id)"],
            payload: Data(), createdAt: clock.now)
        let page = try await store.targets(for: job, after: 0, limit: 10)
        return try #require(page.targets.first { $0.deviceID == device.id }).ref
    }
}
