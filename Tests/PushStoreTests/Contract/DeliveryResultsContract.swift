import Foundation
import PushStore
import Testing

final class DeliveryResultsContract: StoreContract {
    @Test(arguments: ContractBackend.selected)
    func testUnregisteredOlderThanLastRegistrationDoesNotInvalidate(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let (device, ref) = try await registeredWithRef(store, 1)
        let registeredAt = device.lastRegisteredAt
        clock.advance(5)
        try await store.recordDeviceResults([
            unregistered(ref, since: registeredAt.addingTimeInterval(-1))
        ])
        var stored = try await store.device(instanceID: instance, id: device.id)!
        #expect(stored.invalidatedAt == nil, "a token re-registered after APNs' timestamp stays valid")
        #expect(stored.lastResult == DeliveryResult(status: 410, reason: "Unregistered", at: clock.now))

        // Same instant as the registration: still not later, still valid.
        try await store.recordDeviceResults([
            unregistered(ref, since: registeredAt)
        ])
        stored = try await store.device(instanceID: instance, id: device.id)!
        #expect(stored.invalidatedAt == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUnregisteredLaterThanLastRegistrationInvalidatesUntilReRegistration(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        let (device, ref) = try await registeredWithRef(store, 1)
        clock.advance(5)
        try await store.recordDeviceResults([
            unregistered(ref, since: device.lastRegisteredAt.addingTimeInterval(1))
        ])
        let invalidated = try await store.device(instanceID: instance, id: device.id)!
        #expect(invalidated.invalidatedAt == clock.now)
        let count = try await store.devices(instanceID: instance, userID: "user-1").count
        #expect(count == 1, "invalidated devices stay listed for the user")

        clock.advance(5)
        let again = try await register(store, 1)
        #expect(again.invalidatedAt == nil)
        #expect(again.userID == "user-1")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testBadTokenInvalidatesUnlessDeviceRegisteredAfterTheResult(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let (device, ref) = try await registeredWithRef(store, 1)
        let sentAt = clock.now.addingTimeInterval(-1)
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 400, reason: "BadDeviceToken", at: sentAt, effect: .badToken)
        ])
        var stored = try await store.device(instanceID: instance, id: device.id)!
        #expect(stored.invalidatedAt == nil)
        clock.advance(1)
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 400, reason: "DeviceTokenNotForTopic", at: clock.now, effect: .badToken)
        ])
        stored = try await store.device(instanceID: instance, id: device.id)!
        #expect(stored.invalidatedAt == clock.now)
        #expect(stored.lastResult?.reason == "DeviceTokenNotForTopic")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testEnvironmentCorrectionAndPlainResults(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let (device, ref) = try await registeredWithRef(store, 1)
        #expect(device.environment == .production)
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 200, at: clock.now, effect: .environment(.sandbox))
        ])
        let stored = try await store.device(instanceID: instance, id: device.id)!
        #expect(stored.environment == .sandbox)
        #expect(!stored.environmentDeclared)
        #expect(stored.lastResult == DeliveryResult(status: 200, reason: nil, at: clock.now))
        #expect(stored.invalidatedAt == nil)
        // A later defaulted registration keeps the corrected environment.
        let again = try await register(store, 1)
        #expect(again.environment == .sandbox)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testReportingEventsCountOncePerDeviceAndKind(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let events = [
            ReportingEvent(
                instanceID: instance, publishID: "p1", deviceID: "d1", userID: nil, kind: .delivery, at: clock.now),
            ReportingEvent(
                instanceID: instance, publishID: "p1", deviceID: "d1", userID: nil, kind: .delivery, at: clock.now),
            ReportingEvent(
                instanceID: instance, publishID: "p1", deviceID: "d2", userID: "u", kind: .delivery, at: clock.now),
            ReportingEvent(
                instanceID: instance, publishID: "p1", deviceID: "d1", userID: nil, kind: .open, at: clock.now),
            ReportingEvent(
                instanceID: instance, publishID: "p2", deviceID: "d1", userID: nil, kind: .open, at: clock.now),
        ]
        let recorded = try await store.recordEvents(events)
        #expect(recorded == 4)
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "p1", kind: .interests, targets: ["a"], payload: Data(),
                createdAt: clock.now))
        let status = try await store.publishStatus(instanceID: instance, publishID: "p1")
        #expect(status?.delivered == 2)
        #expect(status?.opened == 1)
        try await store.close()
    }
}
