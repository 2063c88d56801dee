import Foundation
import PushStore
import Testing

final class InvalidationLogContract: StoreContract {
    @Test(arguments: ContractBackend.selected)
    func testInvalidationIsLoggedOnceWithMaskedTokenAndProviderTimestamp(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let (device, ref) = try await registeredWithRef(store, 1)
        clock.advance(5)
        let since = device.lastRegisteredAt.addingTimeInterval(2)
        let dead = unregistered(ref, since: since)
        try await store.recordDeviceResults([dead])
        // The same answer again (a resumed publish) invalidates nothing new: logged once.
        try await store.recordDeviceResults([dead])
        let logged = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        #expect(logged.count == 1)
        let record = try #require(logged.first)
        #expect(record.deviceID == device.id)
        #expect(record.platform == "apns")
        #expect(record.userID == "user-1")
        #expect(record.reason == "Unregistered")
        #expect(record.status == 410)
        #expect(record.providerTimestamp == since)
        #expect(record.at == clock.now)
        #expect(record.maskedToken == "…" + String(device.token.suffix(6)))
        #expect(!record.maskedToken.contains(device.token))
        let other = try await store.invalidations(instanceID: "other", after: 0, limit: 10)
        #expect(other == [], "another instance's feed is empty")
        let after = try await store.invalidations(instanceID: instance, after: record.id, limit: 10)
        #expect(after == [])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testResultThatDoesNotInvalidateIsNotLogged(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let (device, ref) = try await registeredWithRef(store, 1)
        clock.advance(5)
        // APNs' timestamp before the last registration: the device stays valid.
        try await store.recordDeviceResults([
            unregistered(ref, since: device.lastRegisteredAt.addingTimeInterval(-1)),
            DeviceResult(device: ref, status: 200, at: clock.now),
        ])
        let logged = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        #expect(logged == [])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testNotifierSeesEachInvalidationUntilMarked(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let (_, first) = try await registeredWithRef(store, 1)
        let (_, second) = try await registeredWithRef(store, 2)
        clock.advance(5)
        try await store.recordDeviceResults([
            DeviceResult(device: first, status: 400, reason: "BadDeviceToken", at: clock.now, effect: .badToken),
            DeviceResult(device: second, status: 404, reason: "UNREGISTERED", at: clock.now, effect: .badToken),
        ])
        let pending = try await store.unnotifiedInvalidations(limit: 10)
        #expect(pending.map(\.reason) == ["BadDeviceToken", "UNREGISTERED"])
        #expect(pending[0].providerTimestamp == nil, "BadDeviceToken carries no provider timestamp")
        try await store.markInvalidationsNotified([pending[0].id])
        let still = try await store.unnotifiedInvalidations(limit: 10)
        #expect(still.map(\.id) == [pending[1].id])
        let feed = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        #expect(feed.count == 2, "the feed keeps notified rows")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testPurgeDropsOldRowsAndRowsOverTheInstanceCap(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        var refs: [Int64] = []
        for n in 1...4 { refs.append(try await registeredWithRef(store, n).1) }
        clock.advance(5)
        try await store.recordDeviceResults([
            DeviceResult(device: refs[0], status: 400, at: clock.now, effect: .badToken)
        ])
        let cutoff = clock.now.addingTimeInterval(1)
        clock.advance(10)
        try await store.recordDeviceResults(
            refs[1...].map {
                DeviceResult(device: $0, status: 400, at: clock.now, effect: .badToken)
            })
        let all = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        #expect(all.count == 4)
        let purged = try await store.purgeInvalidations(before: cutoff, keepPerInstance: 2, limit: 100)
        #expect(purged == 2, "the old one, and the oldest of the three over the cap of 2")
        let left = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        #expect(left.map(\.id) == Array(all.suffix(2).map(\.id)))
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDeletingADeviceOrAUserLogsEachDeviceAsRemoved(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let (lone, _) = try await registeredWithRef(store, 1)
        let (bound, _) = try await registeredWithRef(store, 2)
        let deleted = try await store.deleteDevice(instanceID: instance, id: lone.id)
        #expect(deleted)
        let unknown = try await store.deleteDevice(instanceID: instance, id: lone.id)
        #expect(!unknown, "a device deleted twice is logged once")
        let removedDevices = try await store.deleteUser(instanceID: instance, userID: "user-2")
        #expect(removedDevices == 1)
        let logged = try await store.invalidations(instanceID: instance, after: 0, limit: 10)
        #expect(logged.map(\.deviceID) == [lone.id, bound.id])
        #expect(logged.map(\.reason) == [DeviceInvalidation.deviceDeleted, DeviceInvalidation.userDeleted])
        #expect(logged.map(\.userID) == ["user-1", "user-2"])
        #expect(logged.allSatisfy { $0.isRemoval && $0.providerTimestamp == nil && $0.platform == "apns" })
        #expect(logged.first?.maskedToken == "…" + String(lone.token.suffix(6)))
        try await store.close()
    }
}
