import Foundation
import XCTest

import PushStore

final class DeviceRegistryContract: StoreContract {
    func testRegistrationCreatesDeviceWithPlatformPrefixedID() async throws {
        let store = try await openStore()
        let registered = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, token: token(1), bundleID: "com.example.app", metadata: "{}"))
        XCTAssertTrue(registered.created)
        XCTAssertEqual(registered.interests, [])
        let device = registered.device
        XCTAssertTrue(device.id.hasPrefix("apns-"))
        XCTAssertNotNil(UUID(uuidString: String(device.id.dropFirst(5))))
        XCTAssertEqual(device.id, device.id.lowercased())
        XCTAssertEqual(device.environment, .production)
        XCTAssertFalse(device.environmentDeclared)
        XCTAssertEqual(device.createdAt, clock.now)
        XCTAssertNil(device.userID)
        try await store.close()
    }

    func testDeviceIDsAreVersion7UUIDsThatSortByCreationTime() async throws {
        let store = try await openStore()
        var ids: [String] = []
        for n in 0..<5 {
            ids.append(try await register(store, n).id)
            clock.advance(0.002)
        }
        XCTAssertEqual(ids, ids.sorted())
        for id in ids {
            let uuid = String(id.dropFirst("apns-".count))
            XCTAssertEqual(Array(uuid)[14], "7", id)
            XCTAssertTrue("89ab".contains(Array(uuid)[19]), id)
        }
        let prefix = String(ids[0].dropFirst(5).prefix(8) + ids[0].dropFirst(5).dropFirst(9).prefix(4))
        XCTAssertEqual(UInt64(prefix, radix: 16), UInt64(Date(millisecondsSince1970: 1_700_000_000_000).millisecondsSince1970))
        try await store.close()
    }

    func testReRegistrationKeepsIDInterestsAndUserAndUpdatesFields() async throws {
        let store = try await openStore()
        let first = try await register(store, 1)
        let value1 = try await store.setInterests(instanceID: instance, deviceID: first.id, interests: ["b", "a"])
        XCTAssertTrue(value1)
        let value2 = try await store.setUser(instanceID: instance, deviceID: first.id, userID: "u1", maxDevicesPerUser: 100)
        XCTAssertEqual(value2, .ok)
        clock.advance(60)
        let again = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, token: token(1), bundleID: "com.example.other", metadata: #"{"v":2}"#))
        XCTAssertFalse(again.created)
        XCTAssertEqual(again.device.id, first.id)
        XCTAssertEqual(again.interests, ["a", "b"])
        XCTAssertEqual(again.device.userID, "u1")
        XCTAssertEqual(again.device.bundleID, "com.example.other")
        XCTAssertEqual(again.device.metadata, #"{"v":2}"#)
        XCTAssertEqual(again.device.createdAt, first.createdAt)
        XCTAssertEqual(again.device.lastRegisteredAt, clock.now)
        try await store.close()
    }

    func testSameTokenInAnotherInstanceIsAnotherDevice() async throws {
        let store = try await openStore()
        let a = try await register(store, 1)
        let b = try await store.registerDevice(DeviceRegistration(instanceID: "other-instance", token: token(1))).device
        XCTAssertNotEqual(a.id, b.id)
        let lookup = try await store.device(instanceID: "other-instance", id: a.id)
        XCTAssertNil(lookup, "a device id must not resolve in another instance")
        try await store.close()
    }

    func testDefaultedEnvironmentNeverOverwritesDeclaredOrCorrectedOne() async throws {
        let store = try await openStore()
        let declared = try await register(store, 1, declared: .sandbox)
        XCTAssertEqual(declared.environment, .sandbox)
        XCTAssertTrue(declared.environmentDeclared)
        // A registration that only defaults the environment keeps the stored one.
        let defaulted = try await register(store, 1)
        XCTAssertEqual(defaulted.environment, .sandbox)
        XCTAssertTrue(defaulted.environmentDeclared)
        // A declared one replaces it.
        let redeclared = try await register(store, 1, declared: .production)
        XCTAssertEqual(redeclared.environment, .production)
        try await store.close()
    }

    func testLookupsByIDAndTokenAndMissingDevices() async throws {
        let store = try await openStore()
        let device = try await register(store, 7)
        let byID = try await store.device(instanceID: instance, id: device.id)
        XCTAssertEqual(byID, device)
        let byToken = try await store.device(instanceID: instance, platform: .apns, token: token(7))
        XCTAssertEqual(byToken, device)
        let missingToken = try await store.device(instanceID: instance, platform: .apns, token: token(8))
        XCTAssertNil(missingToken)
        let wrongPlatform = try await store.device(instanceID: instance, platform: .fcm, token: token(7))
        XCTAssertNil(wrongPlatform)
        let missingID = try await store.device(instanceID: instance, id: "apns-nope")
        XCTAssertNil(missingID)
        try await store.close()
    }

    func testDeviceRefNamesTheDeviceForAResultRecordedOutsideAPublish() async throws {
        let store = try await openStore()
        let device = try await register(store, 3)
        let other = try await register(store, 4)
        let ref = try await store.deviceRef(instanceID: instance, id: device.id)
        let unwrapped = try XCTUnwrap(ref)
        let missing = try await store.deviceRef(instanceID: instance, id: "apns-nope")
        XCTAssertNil(missing)
        let elsewhere = try await store.deviceRef(instanceID: "another-instance", id: device.id)
        XCTAssertNil(elsewhere, "a device id of one instance names nothing in another")
        clock.advance(1)
        try await store.recordDeviceResults([DeviceResult(device: unwrapped, status: 400, reason: "BadDeviceToken",
                                                          at: clock.now, effect: .badToken)])
        let after = try await store.device(instanceID: instance, id: device.id)
        XCTAssertEqual(after?.lastResult?.reason, "BadDeviceToken")
        XCTAssertNotNil(after?.invalidatedAt, "the ref is the key results are recorded under")
        let untouched = try await store.device(instanceID: instance, id: other.id)
        XCTAssertNil(untouched?.invalidatedAt)
        try await store.close()
    }

    func testDeleteDeviceDropsInterestsAndUserAndReportsWhetherFound() async throws {
        let store = try await openStore()
        let device = try await register(store, 1)
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["news"])
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "u", maxDevicesPerUser: 100)
        let value3 = try await store.deleteDevice(instanceID: instance, id: device.id)
        XCTAssertTrue(value3)
        let value4 = try await store.deleteDevice(instanceID: instance, id: device.id)
        XCTAssertFalse(value4)
        let value5 = try await store.subscriberCount(instanceID: instance, interest: "news")
        XCTAssertEqual(value5, 0)
        let value6 = try await store.devices(instanceID: instance, userID: "u")
        XCTAssertEqual(value6, [])
        // Registering the token again starts from scratch.
        let fresh = try await store.registerDevice(DeviceRegistration(instanceID: instance, token: token(1)))
        XCTAssertTrue(fresh.created)
        XCTAssertNotEqual(fresh.device.id, device.id)
        XCTAssertEqual(fresh.interests, [])
        try await store.close()
    }

    func testUpdateMetadata() async throws {
        let store = try await openStore()
        let device = try await register(store, 1)
        let value7 = try await store.updateMetadata(instanceID: instance, deviceID: device.id, metadata: #"{"x":1}"#)
        XCTAssertTrue(value7)
        let value8 = try await store.device(instanceID: instance, id: device.id)?.metadata
        XCTAssertEqual(value8, #"{"x":1}"#)
        let value9 = try await store.updateMetadata(instanceID: instance, deviceID: "apns-missing", metadata: "{}")
        XCTAssertFalse(value9)
        try await store.close()
    }

    func testUpdateTokenKeepsDeviceInterestsAndUserAndRevalidates() async throws {
        let store = try await openStore()
        let device = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .fcm, token: "fcm-old")).device
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["news"])
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "u", maxDevicesPerUser: 100)
        clock.advance(30)
        let updated = try await store.updateToken(instanceID: instance, deviceID: device.id, platform: .fcm, token: "fcm-new")
        XCTAssertTrue(updated)
        let stored = try await store.device(instanceID: instance, id: device.id)
        XCTAssertEqual(stored?.token, "fcm-new")
        XCTAssertEqual(stored?.userID, "u")
        XCTAssertEqual(stored?.lastRegisteredAt, clock.now)
        let byOld = try await store.device(instanceID: instance, platform: .fcm, token: "fcm-old")
        XCTAssertNil(byOld, "the old token must no longer find the device")
        let byNew = try await store.device(instanceID: instance, platform: .fcm, token: "fcm-new")
        XCTAssertEqual(byNew?.id, device.id)
        let count = try await store.subscriberCount(instanceID: instance, interest: "news")
        XCTAssertEqual(count, 1)
        // The old token registers as a new device now; the same token again is a no-op that still succeeds.
        let again = try await store.registerDevice(DeviceRegistration(instanceID: instance, platform: .fcm, token: "fcm-old"))
        XCTAssertTrue(again.created)
        let same = try await store.updateToken(instanceID: instance, deviceID: device.id, platform: .fcm, token: "fcm-new")
        XCTAssertTrue(same)
        try await store.close()
    }

    func testUpdateTokenDeletesTheOtherDeviceHoldingTheToken() async throws {
        let store = try await openStore()
        let old = try await store.registerDevice(DeviceRegistration(instanceID: instance, platform: .fcm, token: "t-1")).device
        let reinstalled = try await store.registerDevice(DeviceRegistration(instanceID: instance, platform: .fcm, token: "t-2")).device
        _ = try await store.setInterests(instanceID: instance, deviceID: reinstalled.id, interests: ["only-other"])
        // The same user on both (a phone reinstalled and restored): the move is allowed.
        _ = try await store.setUser(instanceID: instance, deviceID: old.id, userID: "u2", maxDevicesPerUser: 100)
        _ = try await store.setUser(instanceID: instance, deviceID: reinstalled.id, userID: "u2", maxDevicesPerUser: 100)
        // Same token on another platform and in another instance: not touched.
        let apns = try await store.registerDevice(DeviceRegistration(instanceID: instance, platform: .apns, token: "t-2")).device
        let elsewhere = try await store.registerDevice(DeviceRegistration(instanceID: "other-instance", platform: .fcm, token: "t-2")).device
        let updated = try await store.updateToken(instanceID: instance, deviceID: old.id, platform: .fcm, token: "t-2")
        XCTAssertTrue(updated)
        let gone = try await store.device(instanceID: instance, id: reinstalled.id)
        XCTAssertNil(gone, "the device that held the token is deleted")
        let holder = try await store.device(instanceID: instance, platform: .fcm, token: "t-2")
        XCTAssertEqual(holder?.id, old.id)
        let orphanInterest = try await store.subscriberCount(instanceID: instance, interest: "only-other")
        XCTAssertEqual(orphanInterest, 0)
        let userDevices = try await store.devices(instanceID: instance, userID: "u2").map(\.id)
        XCTAssertEqual(userDevices, [old.id])
        let keptAPNs = try await store.device(instanceID: instance, id: apns.id)
        XCTAssertEqual(keptAPNs?.token, "t-2")
        let keptElsewhere = try await store.device(instanceID: "other-instance", id: elsewhere.id)
        XCTAssertEqual(keptElsewhere?.token, "t-2")
        // A new device fits under a limit of 3 again: the deleted one no longer counts.
        let fits = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .fcm, token: "t-3"), maxDevicesPerInstance: 3)
        XCTAssertTrue(fits.created)
        try await store.close()
    }

    func testUpdateTokenRefusesATokenOfALiveDeviceBoundToAnotherUser() async throws {
        let store = try await openStore()
        let victim = try await store.registerDevice(DeviceRegistration(instanceID: instance, platform: .fcm, token: "victim")).device
        _ = try await store.setInterests(instanceID: instance, deviceID: victim.id, interests: ["private"])
        _ = try await store.setUser(instanceID: instance, deviceID: victim.id, userID: "victim-user", maxDevicesPerUser: 100)
        let attacker = try await store.registerDevice(DeviceRegistration(instanceID: instance, platform: .fcm, token: "a-1")).device
        let anonymous = try await store.registerDevice(DeviceRegistration(instanceID: instance, platform: .fcm, token: "a-2")).device
        _ = try await store.setUser(instanceID: instance, deviceID: attacker.id, userID: "attacker-user", maxDevicesPerUser: 100)
        for thief in [attacker, anonymous] {
            do {
                _ = try await store.updateToken(instanceID: instance, deviceID: thief.id, platform: .fcm, token: "victim")
                XCTFail("the token of a device bound to another user must not move")
            } catch PushStoreError.tokenHeldByAnotherUser {}
            let kept = try await store.device(instanceID: instance, id: thief.id)
            XCTAssertNotEqual(kept?.token, "victim")
        }
        let owner = try await store.device(instanceID: instance, platform: .fcm, token: "victim")
        XCTAssertEqual(owner?.id, victim.id)
        XCTAssertEqual(owner?.userID, "victim-user")
        let followers = try await store.subscriberCount(instanceID: instance, interest: "private")
        XCTAssertEqual(followers, 1)
        // Once the provider invalidated the victim's device, the token is free to move.
        let job = PublishJob(instanceID: instance, publishID: "p", kind: .users, targets: ["victim-user"], payload: Data(),
                             createdAt: clock.now)
        let page = try await store.targets(for: job, after: 0, limit: 10)
        let target = try XCTUnwrap(page.targets.first)
        clock.advance(1)
        try await store.recordDeviceResults([DeviceResult(
            device: target.ref, status: 400, reason: "BadDeviceToken", at: clock.now, effect: .badToken)])
        let moved = try await store.updateToken(instanceID: instance, deviceID: attacker.id, platform: .fcm, token: "victim")
        XCTAssertTrue(moved)
        let gone = try await store.device(instanceID: instance, id: victim.id)
        XCTAssertNil(gone)
        try await store.close()
    }

    func testUpdateTokenReportsUnknownDeviceOrWrongPlatform() async throws {
        let store = try await openStore()
        let missing = try await store.updateToken(instanceID: instance, deviceID: "fcm-missing", platform: .fcm, token: "x")
        XCTAssertFalse(missing)
        let apns = try await register(store, 1)
        let wrongPlatform = try await store.updateToken(instanceID: instance, deviceID: apns.id, platform: .fcm, token: "x")
        XCTAssertFalse(wrongPlatform)
        let otherInstance = try await store.updateToken(instanceID: "other-instance", deviceID: apns.id, platform: .apns, token: token(2))
        XCTAssertFalse(otherInstance)
        let unchanged = try await store.device(instanceID: instance, id: apns.id)
        XCTAssertEqual(unchanged?.token, token(1))
        try await store.close()
    }

    func testInterestMutationsReportMissingDevice() async throws {
        let store = try await openStore()
        let value10 = try await store.setInterests(instanceID: instance, deviceID: "apns-missing", interests: ["a"])
        XCTAssertFalse(value10)
        let value11 = try await store.addInterest(instanceID: instance, deviceID: "apns-missing", interest: "a")
        XCTAssertFalse(value11)
        let value12 = try await store.removeInterest(instanceID: instance, deviceID: "apns-missing", interest: "a")
        XCTAssertFalse(value12)
        let page = try await store.interests(instanceID: instance, deviceID: "apns-missing", limit: 10, cursor: nil)
        XCTAssertNil(page)
        try await store.close()
    }

    func testAddRemoveAndSetInterestsAreIdempotent() async throws {
        let store = try await openStore()
        let device = try await register(store, 1)
        let value13 = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "a")
        XCTAssertTrue(value13)
        let value14 = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "a")
        XCTAssertTrue(value14)
        let value15 = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "b")
        XCTAssertTrue(value15)
        let value16 = try await store.removeInterest(instanceID: instance, deviceID: device.id, interest: "b")
        XCTAssertTrue(value16)
        let value17 = try await store.removeInterest(instanceID: instance, deviceID: device.id, interest: "never")
        XCTAssertTrue(value17)
        var page = try await store.interests(instanceID: instance, deviceID: device.id, limit: 100, cursor: nil)
        XCTAssertEqual(page?.interests, ["a"])
        let value18 = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["z", "y", "z"])
        XCTAssertTrue(value18)
        page = try await store.interests(instanceID: instance, deviceID: device.id, limit: 100, cursor: nil)
        XCTAssertEqual(page?.interests, ["y", "z"])
        XCTAssertNil(page?.nextCursor)
        let value19 = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: [])
        XCTAssertTrue(value19)
        page = try await store.interests(instanceID: instance, deviceID: device.id, limit: 100, cursor: nil)
        XCTAssertEqual(page?.interests, [])
        try await store.close()
    }

    func testInterestPagingVisitsEveryInterestOnceAndCursorSurvivesChanges() async throws {
        let store = try await openStore()
        let device = try await register(store, 1)
        let names = (0..<25).map { String(format: "interest-%02d", $0) }
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: names.shuffled())
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let page = try await store.interests(instanceID: instance, deviceID: device.id, limit: 10, cursor: cursor)
            seen += page?.interests ?? []
            cursor = page?.nextCursor
            pages += 1
            if pages == 1 {
                // A change before the cursor does not shift later pages.
                _ = try await store.removeInterest(instanceID: instance, deviceID: device.id, interest: "interest-00")
            }
        } while cursor != nil
        XCTAssertEqual(pages, 3)
        XCTAssertEqual(seen, names)
        try await store.close()
    }

    func testSetUserRulesAndLimit() async throws {
        let store = try await openStore()
        let a = try await register(store, 1)
        let b = try await register(store, 2)
        let c = try await register(store, 3)
        let value20 = try await store.setUser(instanceID: instance, deviceID: a.id, userID: "u", maxDevicesPerUser: 2)
        XCTAssertEqual(value20, .ok)
        let value21 = try await store.setUser(instanceID: instance, deviceID: a.id, userID: "u", maxDevicesPerUser: 2)
        XCTAssertEqual(value21, .ok)
        let result1 = try await store.setUser(instanceID: instance, deviceID: a.id, userID: "other", maxDevicesPerUser: 2)
        XCTAssertEqual(result1, .differentUserAlreadySet)
        let value22 = try await store.setUser(instanceID: instance, deviceID: b.id, userID: "u", maxDevicesPerUser: 2)
        XCTAssertEqual(value22, .ok)
        let result2 = try await store.setUser(instanceID: instance, deviceID: c.id, userID: "u", maxDevicesPerUser: 2)
        XCTAssertEqual(result2, .userHasTooManyDevices)
        let result3 = try await store.setUser(instanceID: instance, deviceID: "apns-missing", userID: "u", maxDevicesPerUser: 2)
        XCTAssertEqual(result3, .deviceNotFound)
        let value23 = try await store.devices(instanceID: instance, userID: "u").map(\.id)
        XCTAssertEqual(value23, [a.id, b.id])
        let value24 = try await store.device(instanceID: instance, id: c.id)?.userID
        XCTAssertEqual(value24, nil)
        try await store.close()
    }

    func testDeleteUserRemovesOnlyThatUsersDevicesAndTheirInterests() async throws {
        let store = try await openStore()
        let a = try await register(store, 1)
        let b = try await register(store, 2)
        let c = try await register(store, 3)
        for device in [a, b] {
            _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "u", maxDevicesPerUser: 100)
            _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "news")
        }
        _ = try await store.addInterest(instanceID: instance, deviceID: c.id, interest: "news")
        let value25 = try await store.deleteUser(instanceID: instance, userID: "u")
        XCTAssertEqual(value25, 2)
        let value26 = try await store.deleteUser(instanceID: instance, userID: "u")
        XCTAssertEqual(value26, 0)
        let value27 = try await store.device(instanceID: instance, id: a.id)
        XCTAssertNil(value27)
        let value28 = try await store.device(instanceID: instance, id: c.id)
        XCTAssertNotNil(value28)
        let value29 = try await store.subscriberCount(instanceID: instance, interest: "news")
        XCTAssertEqual(value29, 1)
        try await store.close()
    }

    func testBatchRegistrationIsOrderedAndIdempotent() async throws {
        let store = try await openStore()
        let batch = (0..<50).map { DeviceRegistration(instanceID: instance, token: token($0)) }
        let first = try await store.registerDevices(batch)
        let second = try await store.registerDevices(batch)
        XCTAssertEqual(first.map(\.device.token), batch.map(\.token))
        XCTAssertTrue(first.allSatisfy(\.created))
        XCTAssertFalse(second.contains(where: \.created))
        XCTAssertEqual(first.map(\.device.id), second.map(\.device.id))
        try await store.close()
    }
}
