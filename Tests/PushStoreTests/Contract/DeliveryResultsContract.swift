import Foundation
import XCTest

import PushStore

final class DeliveryResultsContract: StoreContract {
    func ref(_ store: any PushStorage, _ device: Device) async throws -> Int64 {
        let job = PublishJob(instanceID: instance, publishID: "p", kind: .users, targets: [device.userID!], payload: Data(), createdAt: clock.now)
        let page = try await store.targets(for: job, after: 0, limit: 10)
        return try XCTUnwrap(page.targets.first { $0.deviceID == device.id }).ref
    }

    func registeredWithRef(_ store: any PushStorage, _ n: Int) async throws -> (Device, Int64) {
        let device = try await register(store, n)
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "user-\(n)", maxDevicesPerUser: 100)
        let withUser = try await store.device(instanceID: instance, id: device.id)!
        return (withUser, try await ref(store, withUser))
    }

    func testUnregisteredOlderThanLastRegistrationDoesNotInvalidate() async throws {
        let store = try await openStore()
        let (device, ref) = try await registeredWithRef(store, 1)
        let registeredAt = device.lastRegisteredAt
        clock.advance(5)
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 410, reason: "Unregistered", at: clock.now,
                         effect: .unregistered(since: registeredAt.addingTimeInterval(-1)))
        ])
        var stored = try await store.device(instanceID: instance, id: device.id)!
        XCTAssertNil(stored.invalidatedAt, "a token re-registered after APNs' timestamp stays valid")
        XCTAssertEqual(stored.lastResult, DeliveryResult(status: 410, reason: "Unregistered", at: clock.now))

        // Same instant as the registration: still not later, still valid.
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 410, reason: "Unregistered", at: clock.now, effect: .unregistered(since: registeredAt))
        ])
        stored = try await store.device(instanceID: instance, id: device.id)!
        XCTAssertNil(stored.invalidatedAt)
        try await store.close()
    }

    func testUnregisteredLaterThanLastRegistrationInvalidatesUntilReRegistration() async throws {
        let store = try await openStore()
        let (device, ref) = try await registeredWithRef(store, 1)
        clock.advance(5)
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 410, reason: "Unregistered", at: clock.now,
                         effect: .unregistered(since: device.lastRegisteredAt.addingTimeInterval(1)))
        ])
        let invalidated = try await store.device(instanceID: instance, id: device.id)!
        XCTAssertEqual(invalidated.invalidatedAt, clock.now)
        let count = try await store.devices(instanceID: instance, userID: "user-1").count
        XCTAssertEqual(count, 1, "invalidated devices stay listed for the user")

        clock.advance(5)
        let again = try await register(store, 1)
        XCTAssertNil(again.invalidatedAt)
        XCTAssertEqual(again.userID, "user-1")
        try await store.close()
    }

    func testBadTokenInvalidatesUnlessDeviceRegisteredAfterTheResult() async throws {
        let store = try await openStore()
        let (device, ref) = try await registeredWithRef(store, 1)
        let sentAt = clock.now.addingTimeInterval(-1)
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 400, reason: "BadDeviceToken", at: sentAt, effect: .badToken)
        ])
        var stored = try await store.device(instanceID: instance, id: device.id)!
        XCTAssertNil(stored.invalidatedAt)
        clock.advance(1)
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 400, reason: "DeviceTokenNotForTopic", at: clock.now, effect: .badToken)
        ])
        stored = try await store.device(instanceID: instance, id: device.id)!
        XCTAssertEqual(stored.invalidatedAt, clock.now)
        XCTAssertEqual(stored.lastResult?.reason, "DeviceTokenNotForTopic")
        try await store.close()
    }

    func testEnvironmentCorrectionAndPlainResults() async throws {
        let store = try await openStore()
        let (device, ref) = try await registeredWithRef(store, 1)
        XCTAssertEqual(device.environment, .production)
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 200, at: clock.now, effect: .environment(.sandbox))
        ])
        let stored = try await store.device(instanceID: instance, id: device.id)!
        XCTAssertEqual(stored.environment, .sandbox)
        XCTAssertFalse(stored.environmentDeclared)
        XCTAssertEqual(stored.lastResult, DeliveryResult(status: 200, reason: nil, at: clock.now))
        XCTAssertNil(stored.invalidatedAt)
        // A later defaulted registration keeps the corrected environment.
        let again = try await register(store, 1)
        XCTAssertEqual(again.environment, .sandbox)
        try await store.close()
    }

    func testReportingEventsCountOncePerDeviceAndKind() async throws {
        let store = try await openStore()
        let events = [
            ReportingEvent(instanceID: instance, publishID: "p1", deviceID: "d1", userID: nil, kind: .delivery, at: clock.now),
            ReportingEvent(instanceID: instance, publishID: "p1", deviceID: "d1", userID: nil, kind: .delivery, at: clock.now),
            ReportingEvent(instanceID: instance, publishID: "p1", deviceID: "d2", userID: "u", kind: .delivery, at: clock.now),
            ReportingEvent(instanceID: instance, publishID: "p1", deviceID: "d1", userID: nil, kind: .open, at: clock.now),
            ReportingEvent(instanceID: instance, publishID: "p2", deviceID: "d1", userID: nil, kind: .open, at: clock.now),
        ]
        let recorded = try await store.recordEvents(events)
        XCTAssertEqual(recorded, 4)
        _ = try await store.enqueuePublish(
            PublishJob(instanceID: instance, publishID: "p1", kind: .interests, targets: ["a"], payload: Data(), createdAt: clock.now))
        let status = try await store.publishStatus(instanceID: instance, publishID: "p1")
        XCTAssertEqual(status?.delivered, 2)
        XCTAssertEqual(status?.opened, 1)
        try await store.close()
    }
}
