import Foundation
import XCTest

import PushStore

final class InvalidationLogContract: StoreContract {
    func registeredWithRef(_ store: any PushStorage, _ n: Int) async throws -> (Device, Int64) {
        let device = try await register(store, n)
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "user-\(n)", maxDevicesPerUser: 100)
        let job = PublishJob(instanceID: instance, publishID: "p\(n)", kind: .users, targets: ["user-\(n)"], payload: Data(),
                             createdAt: clock.now)
        let page = try await store.targets(for: job, after: 0, limit: 10)
        let ref = try XCTUnwrap(page.targets.first { $0.deviceID == device.id }).ref
        return (try await store.device(instanceID: instance, id: device.id)!, ref)
    }

    func testInvalidationIsLoggedOnceWithMaskedTokenAndProviderTimestamp() async throws {
        let store = try await openStore()
        let (device, ref) = try await registeredWithRef(store, 1)
        clock.advance(5)
        let since = device.lastRegisteredAt.addingTimeInterval(2)
        let dead = DeviceResult(device: ref, status: 410, reason: "Unregistered", at: clock.now,
                                effect: .unregistered(since: since))
        try await store.recordDeviceResults([dead])
        // The same answer again (a resumed publish) invalidates nothing new: logged once.
        try await store.recordDeviceResults([dead])
        let logged = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        XCTAssertEqual(logged.count, 1)
        let record = try XCTUnwrap(logged.first)
        XCTAssertEqual(record.deviceID, device.id)
        XCTAssertEqual(record.platform, "apns")
        XCTAssertEqual(record.userID, "user-1")
        XCTAssertEqual(record.reason, "Unregistered")
        XCTAssertEqual(record.status, 410)
        XCTAssertEqual(record.providerTimestamp, since)
        XCTAssertEqual(record.at, clock.now)
        XCTAssertEqual(record.maskedToken, "…" + String(device.token.suffix(6)))
        XCTAssertFalse(record.maskedToken.contains(device.token))
        let other = try await store.invalidations(instanceID: "other", after: 0, limit: 10)
        XCTAssertEqual(other, [], "another instance's feed is empty")
        let after = try await store.invalidations(instanceID: instance, after: record.id, limit: 10)
        XCTAssertEqual(after, [])
        try await store.close()
    }

    func testResultThatDoesNotInvalidateIsNotLogged() async throws {
        let store = try await openStore()
        let (device, ref) = try await registeredWithRef(store, 1)
        clock.advance(5)
        // APNs' timestamp before the last registration: the device stays valid.
        try await store.recordDeviceResults([
            DeviceResult(device: ref, status: 410, reason: "Unregistered", at: clock.now,
                         effect: .unregistered(since: device.lastRegisteredAt.addingTimeInterval(-1))),
            DeviceResult(device: ref, status: 200, at: clock.now),
        ])
        let logged = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        XCTAssertEqual(logged, [])
        try await store.close()
    }

    func testNotifierSeesEachInvalidationUntilMarked() async throws {
        let store = try await openStore()
        let (_, first) = try await registeredWithRef(store, 1)
        let (_, second) = try await registeredWithRef(store, 2)
        clock.advance(5)
        try await store.recordDeviceResults([
            DeviceResult(device: first, status: 400, reason: "BadDeviceToken", at: clock.now, effect: .badToken),
            DeviceResult(device: second, status: 404, reason: "UNREGISTERED", at: clock.now, effect: .badToken),
        ])
        let pending = try await store.unnotifiedInvalidations(limit: 10)
        XCTAssertEqual(pending.map(\.reason), ["BadDeviceToken", "UNREGISTERED"])
        XCTAssertNil(pending[0].providerTimestamp, "BadDeviceToken carries no provider timestamp")
        try await store.markInvalidationsNotified([pending[0].id])
        let still = try await store.unnotifiedInvalidations(limit: 10)
        XCTAssertEqual(still.map(\.id), [pending[1].id])
        let feed = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        XCTAssertEqual(feed.count, 2, "the feed keeps notified rows")
        try await store.close()
    }

    func testPurgeDropsOldRowsAndRowsOverTheInstanceCap() async throws {
        let store = try await openStore()
        var refs: [Int64] = []
        for n in 1...4 { refs.append(try await registeredWithRef(store, n).1) }
        clock.advance(5)
        try await store.recordDeviceResults([DeviceResult(device: refs[0], status: 400, at: clock.now, effect: .badToken)])
        let cutoff = clock.now.addingTimeInterval(1)
        clock.advance(10)
        try await store.recordDeviceResults(refs[1...].map {
            DeviceResult(device: $0, status: 400, at: clock.now, effect: .badToken)
        })
        let all = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        XCTAssertEqual(all.count, 4)
        let purged = try await store.purgeInvalidations(before: cutoff, keepPerInstance: 2, limit: 100)
        XCTAssertEqual(purged, 2, "the old one, and the oldest of the three over the cap of 2")
        let left = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        XCTAssertEqual(left.map(\.id), Array(all.suffix(2).map(\.id)))
        try await store.close()
    }

    func testDeletingADeviceOrAUserLogsEachDeviceAsRemoved() async throws {
        let store = try await openStore()
        let (lone, _) = try await registeredWithRef(store, 1)
        let (bound, _) = try await registeredWithRef(store, 2)
        let deleted = try await store.deleteDevice(instanceID: instance, id: lone.id)
        XCTAssertTrue(deleted)
        let unknown = try await store.deleteDevice(instanceID: instance, id: lone.id)
        XCTAssertFalse(unknown, "a device deleted twice is logged once")
        let removedDevices = try await store.deleteUser(instanceID: instance, userID: "user-2")
        XCTAssertEqual(removedDevices, 1)
        let logged = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        XCTAssertEqual(logged.map(\.deviceID), [lone.id, bound.id])
        XCTAssertEqual(logged.map(\.reason), [DeviceInvalidation.deviceDeleted, DeviceInvalidation.userDeleted])
        XCTAssertEqual(logged.map(\.userID), ["user-1", "user-2"])
        XCTAssertTrue(logged.allSatisfy { $0.isRemoval && $0.providerTimestamp == nil && $0.platform == "apns" })
        XCTAssertEqual(logged.first?.maskedToken, "…" + String(lone.token.suffix(6)))
        try await store.close()
    }
}
