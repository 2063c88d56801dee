import Foundation
import PushStore
import SQL
import XCTest

@testable import SQLiteStore

/// How SQLite keeps the bounds of the contract (`StoreBoundsContract`): the trigger-kept device count per instance
/// and no interest rows without a follower.
final class StoreBoundsTests: StoreTestCase {
    /// A registration of token `n` in `instanceID`, capped at `cap` devices.
    private func register(_ store: SQLitePushStore, _ n: Int, cap: Int, in instanceID: String? = nil) async throws
        -> RegisteredDevice
    {
        try await store.registerDevice(
            DeviceRegistration(instanceID: instanceID ?? instance, token: token(n)),
            maxDevicesPerInstance: cap)
    }

    /// Reads the database file directly (a second connection sees committed writes in WAL mode).
    private func scalar(_ sql: String, _ bindings: [SQLValue] = []) throws -> Int64? {
        let connection = try SQLiteConnection(path: databasePath, readOnly: true)
        defer { try? connection.close() }
        return try connection.first(sql, bindings) { $0.int64(0) }
    }

    private func interestRows() throws -> Int64 { try scalar("SELECT count(*) FROM interests") ?? -1 }

    private func counted(_ instanceID: String? = nil) throws -> Int64? {
        try scalar("SELECT devices FROM instance_device_counts WHERE instance_id = ?", [.text(instanceID ?? instance)])
    }

    // MARK: Devices per instance

    func testNewTokenBeyondTheInstanceCapIsRefusedWhileKnownTokensStillReRegister() async throws {
        let store = try await openStore()
        let first = try await register(store, 1, cap: 2)
        _ = try await register(store, 2, cap: 2)
        await XCTAssertThrowsAsync(PushStoreError.deviceLimitReached) { _ = try await self.register(store, 3, cap: 2) }
        let again = try await register(store, 1, cap: 2)
        XCTAssertFalse(again.created)
        XCTAssertEqual(again.device.id, first.device.id)
        // Another instance has its own count.
        _ = try await register(store, 3, cap: 2, in: "another-instance")
        XCTAssertEqual(try counted(), 2)
        XCTAssertEqual(try counted("another-instance"), 1)
        // The refused registration left nothing behind.
        let missing = try await store.device(instanceID: instance, platform: .apns, token: token(3))
        XCTAssertNil(missing)
        try await store.close()
    }

    func testTheCountFollowsEveryKindOfDeletionSoFreedPlacesCanBeReused() async throws {
        let store = try await openStore()
        let a = try await register(store, 1, cap: 3)
        let b = try await register(store, 2, cap: 3)
        _ = try await register(store, 3, cap: 3)
        XCTAssertEqual(try counted(), 3)
        let deleted = try await store.deleteDevice(instanceID: instance, id: a.device.id)
        XCTAssertTrue(deleted)
        XCTAssertEqual(try counted(), 2)
        _ = try await store.setUser(instanceID: instance, deviceID: b.device.id, userID: "u", maxDevicesPerUser: 10)
        let removed = try await store.deleteUser(instanceID: instance, userID: "u")
        XCTAssertEqual(removed, 1)
        XCTAssertEqual(try counted(), 1)
        // Retention deletes an invalidated device.
        let dead = try await register(store, 4, cap: 3)
        let ref = try scalar("SELECT id FROM devices WHERE public_id = ?", [.text(dead.device.id)]) ?? 0
        clock.advance(1)  // a bad-token answer after the last registration invalidates the device
        try await store.recordDeviceResults([
            DeviceResult(
                device: ref, status: 400, reason: "BadDeviceToken", at: clock.now,
                effect: .badToken)
        ])
        clock.advance(10)
        let purged = try await store.purge(before: clock.now, limit: 10)
        XCTAssertEqual(purged.devices, 1)
        XCTAssertEqual(try counted(), 1)
        _ = try await register(store, 5, cap: 2)
        await XCTAssertThrowsAsync(PushStoreError.deviceLimitReached) { _ = try await self.register(store, 6, cap: 2) }
        try await store.close()
    }

    func testUncappedRegistrationStillCounts() async throws {
        let store = try await openStore()
        _ = try await store.registerDevices((1...5).map { DeviceRegistration(instanceID: instance, token: token($0)) })
        XCTAssertEqual(try counted(), 5)
        await XCTAssertThrowsAsync(PushStoreError.deviceLimitReached) { _ = try await self.register(store, 6, cap: 5) }
        try await store.close()
    }

    // MARK: Interests nobody follows

    func testAnInterestIsDeletedWhenItsLastFollowerGoesHoweverItGoes() async throws {
        let store = try await openStore()
        let a = try await register(store, 1, cap: 10).device
        let b = try await register(store, 2, cap: 10).device
        _ = try await store.setInterests(
            instanceID: instance, deviceID: a.id, interests: ["shared", "a-only", "junk-1"])
        _ = try await store.setInterests(instanceID: instance, deviceID: b.id, interests: ["shared", "b-only"])
        XCTAssertEqual(try interestRows(), 4)
        // Replacing the set drops the names no one else follows.
        _ = try await store.setInterests(instanceID: instance, deviceID: a.id, interests: ["shared", "a-only"])
        XCTAssertEqual(try interestRows(), 3)
        // Unsubscribing.
        _ = try await store.removeInterest(instanceID: instance, deviceID: b.id, interest: "b-only")
        XCTAssertEqual(try interestRows(), 2)
        // Deleting a device (its rows go by ON DELETE CASCADE).
        _ = try await store.deleteDevice(instanceID: instance, id: a.id)
        XCTAssertEqual(try interestRows(), 1, "a-only went with its only follower; shared is still followed by b")
        let shared = try await store.subscriberCount(instanceID: instance, interest: "shared")
        XCTAssertEqual(shared, 1)
        // Deleting the user of the last follower.
        _ = try await store.setUser(instanceID: instance, deviceID: b.id, userID: "u", maxDevicesPerUser: 10)
        _ = try await store.deleteUser(instanceID: instance, userID: "u")
        XCTAssertEqual(try interestRows(), 0)
        try await store.close()
    }

    func testReplacingTheSetAgainAndAgainDoesNotGrowTheInterestsTable() async throws {
        let store = try await openStore()
        let device = try await register(store, 1, cap: 10).device
        for round in 0..<5 {
            let names = (0..<50).map { "round\(round)-\($0)" }
            _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: names)
        }
        XCTAssertEqual(try interestRows(), 50)
        let page = try await store.interests(instanceID: instance, deviceID: device.id, limit: 100, cursor: nil)
        XCTAssertEqual(page?.interests, (0..<50).map { "round4-\($0)" }.sorted())
        try await store.close()
    }

    func testSetInterestsKeepsUnchangedInterestsRows() async throws {
        let store = try await openStore()
        let device = try await register(store, 1, cap: 10).device
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["keep", "drop"])
        let before = try scalar("SELECT id FROM interests WHERE name = 'keep'")
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["keep", "new", "new"])
        XCTAssertEqual(try scalar("SELECT id FROM interests WHERE name = 'keep'"), before)
        let page = try await store.interests(instanceID: instance, deviceID: device.id, limit: 10, cursor: nil)
        XCTAssertEqual(page?.interests, ["keep", "new"])
        try await store.close()
    }

    // MARK: Migration of an existing database

    func testMigrationCountsExistingDevicesAndDropsExistingOrphans() async throws {
        let connection = try SQLiteConnection(path: databasePath)
        try Migrator(migrations: Array(Schema.migrations.prefix(2))).migrate(connection, logger: .disabled)
        try connection.run(
            """
            INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
            VALUES ('apns-1', ?1, 'apns', 'aa', 'production', 0, 0), ('apns-2', ?1, 'apns', 'bb', 'production', 0, 0)
            """, [.text(instance)])
        try connection.run(
            "INSERT INTO interests (instance_id, name) VALUES (?1, 'followed'), (?1, 'orphan')", [.text(instance)])
        try connection.run(
            "INSERT INTO device_interests SELECT i.id, d.id FROM interests i, devices d WHERE i.name = 'followed'")
        try connection.close()

        let store = try await openStore()
        XCTAssertEqual(try counted(), 2)
        XCTAssertEqual(try scalar("SELECT count(*) FROM interests WHERE name = 'orphan'"), 0)
        XCTAssertEqual(try scalar("SELECT count(*) FROM interests WHERE name = 'followed'"), 1)
        await XCTAssertThrowsAsync(PushStoreError.deviceLimitReached) { _ = try await self.register(store, 3, cap: 2) }
        try await store.close()
    }
}
