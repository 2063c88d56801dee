import Foundation
import PushStore
import Testing

final class DeviceRegistryContract: StoreContract {
    @Test(arguments: ContractBackend.selected)
    func testRegistrationCreatesDeviceWithPlatformPrefixedID(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let registered = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, token: token(1), bundleID: "com.example.app", metadata: "{}"))
        #expect(registered.created)
        #expect(registered.interests == [])
        let device = registered.device
        #expect(device.id.hasPrefix("apns-"))
        #expect(UUID(uuidString: String(device.id.dropFirst(5))) != nil)
        #expect(device.id == device.id.lowercased())
        #expect(device.environment == .production)
        #expect(!device.environmentDeclared)
        #expect(device.createdAt == clock.now)
        #expect(device.userID == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDeviceIDsAreVersion7UUIDsThatSortByCreationTime(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        var ids: [String] = []
        for n in 0..<5 {
            ids.append(try await register(store, n).id)
            clock.advance(0.002)
        }
        #expect(ids == ids.sorted())
        for id in ids {
            let uuid = String(id.dropFirst("apns-".count))
            #expect(Array(uuid)[14] == "7", Comment(rawValue: id))
            #expect("89ab".contains(Array(uuid)[19]), Comment(rawValue: id))
        }
        let prefix = String(ids[0].dropFirst(5).prefix(8) + ids[0].dropFirst(5).dropFirst(9).prefix(4))
        #expect(
            UInt64(prefix, radix: 16) == UInt64(Date(millisecondsSince1970: 1_700_000_000_000).millisecondsSince1970))
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testReRegistrationKeepsIDInterestsAndUserAndUpdatesFields(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let first = try await register(store, 1)
        let value1 = try await store.setInterests(instanceID: instance, deviceID: first.id, interests: ["b", "a"])
        #expect(value1)
        let value2 = try await store.setUser(
            instanceID: instance, deviceID: first.id, userID: "u1", maxDevicesPerUser: 100)
        #expect(value2 == .ok)
        clock.advance(60)
        let again = try await store.registerDevice(
            DeviceRegistration(
                instanceID: instance, token: token(1), bundleID: "com.example.other", metadata: #"{"v":2}"#))
        #expect(!again.created)
        #expect(again.device.id == first.id)
        #expect(again.interests == ["a", "b"])
        #expect(again.device.userID == "u1")
        #expect(again.device.bundleID == "com.example.other")
        #expect(again.device.metadata == #"{"v":2}"#)
        #expect(again.device.createdAt == first.createdAt)
        #expect(again.device.lastRegisteredAt == clock.now)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testSameTokenInAnotherInstanceIsAnotherDevice(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let a = try await register(store, 1)
        let b = try await store.registerDevice(DeviceRegistration(instanceID: "other-instance", token: token(1))).device
        #expect(a.id != b.id)
        let lookup = try await store.device(instanceID: "other-instance", id: a.id)
        #expect(lookup == nil, "a device id must not resolve in another instance")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDefaultedEnvironmentNeverOverwritesDeclaredOrCorrectedOne(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let declared = try await register(store, 1, declared: .sandbox)
        #expect(declared.environment == .sandbox)
        #expect(declared.environmentDeclared)
        // A registration that only defaults the environment keeps the stored one.
        let defaulted = try await register(store, 1)
        #expect(defaulted.environment == .sandbox)
        #expect(defaulted.environmentDeclared)
        // A declared one replaces it.
        let redeclared = try await register(store, 1, declared: .production)
        #expect(redeclared.environment == .production)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testLookupsByIDAndTokenAndMissingDevices(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 7)
        let byID = try await store.device(instanceID: instance, id: device.id)
        #expect(byID == device)
        let byToken = try await store.device(instanceID: instance, platform: .apns, token: token(7))
        #expect(byToken == device)
        let missingToken = try await store.device(instanceID: instance, platform: .apns, token: token(8))
        #expect(missingToken == nil)
        let wrongPlatform = try await store.device(instanceID: instance, platform: .fcm, token: token(7))
        #expect(wrongPlatform == nil)
        let missingID = try await store.device(instanceID: instance, id: "apns-nope")
        #expect(missingID == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDeviceRefNamesTheDeviceForAResultRecordedOutsideAPublish(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 3)
        let other = try await register(store, 4)
        let ref = try await store.deviceRef(instanceID: instance, id: device.id)
        let unwrapped = try #require(ref)
        let missing = try await store.deviceRef(instanceID: instance, id: "apns-nope")
        #expect(missing == nil)
        let elsewhere = try await store.deviceRef(instanceID: "another-instance", id: device.id)
        #expect(elsewhere == nil, "a device id of one instance names nothing in another")
        clock.advance(1)
        try await store.recordDeviceResults([
            DeviceResult(
                device: unwrapped, status: 400, reason: "BadDeviceToken",
                at: clock.now, effect: .badToken)
        ])
        let after = try await store.device(instanceID: instance, id: device.id)
        #expect(after?.lastResult?.reason == "BadDeviceToken")
        #expect(after?.invalidatedAt != nil, "the ref is the key results are recorded under")
        let untouched = try await store.device(instanceID: instance, id: other.id)
        #expect(untouched?.invalidatedAt == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDeleteDeviceDropsInterestsAndUserAndReportsWhetherFound(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["news"])
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "u", maxDevicesPerUser: 100)
        let value3 = try await store.deleteDevice(instanceID: instance, id: device.id)
        #expect(value3)
        let value4 = try await store.deleteDevice(instanceID: instance, id: device.id)
        #expect(!value4)
        let value5 = try await store.subscriberCount(instanceID: instance, interest: "news")
        #expect(value5 == 0)
        let value6 = try await store.devices(instanceID: instance, userID: "u")
        #expect(value6 == [])
        // Registering the token again starts from scratch.
        let fresh = try await store.registerDevice(DeviceRegistration(instanceID: instance, token: token(1)))
        #expect(fresh.created)
        #expect(fresh.device.id != device.id)
        #expect(fresh.interests == [])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUpdateMetadata(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        let value7 = try await store.updateMetadata(instanceID: instance, deviceID: device.id, metadata: #"{"x":1}"#)
        #expect(value7)
        let value8 = try await store.device(instanceID: instance, id: device.id)?.metadata
        #expect(value8 == #"{"x":1}"#)
        let value9 = try await store.updateMetadata(instanceID: instance, deviceID: "apns-missing", metadata: "{}")
        #expect(!value9)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUpdateTokenKeepsDeviceInterestsAndUserAndRevalidates(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .fcm, token: "fcm-old")
        ).device
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["news"])
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "u", maxDevicesPerUser: 100)
        clock.advance(30)
        let updated = try await store.updateToken(
            instanceID: instance, deviceID: device.id, platform: .fcm, token: "fcm-new")
        #expect(updated)
        let stored = try await store.device(instanceID: instance, id: device.id)
        #expect(stored?.token == "fcm-new")
        #expect(stored?.userID == "u")
        #expect(stored?.lastRegisteredAt == clock.now)
        let byOld = try await store.device(instanceID: instance, platform: .fcm, token: "fcm-old")
        #expect(byOld == nil, "the old token must no longer find the device")
        let byNew = try await store.device(instanceID: instance, platform: .fcm, token: "fcm-new")
        #expect(byNew?.id == device.id)
        let count = try await store.subscriberCount(instanceID: instance, interest: "news")
        #expect(count == 1)
        // The old token registers as a new device now; the same token again is a no-op that still succeeds.
        let again = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .fcm, token: "fcm-old"))
        #expect(again.created)
        let same = try await store.updateToken(
            instanceID: instance, deviceID: device.id, platform: .fcm, token: "fcm-new")
        #expect(same)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUpdateTokenDeletesTheOtherDeviceHoldingTheToken(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let old = try await store.registerDevice(DeviceRegistration(instanceID: instance, platform: .fcm, token: "t-1"))
            .device
        let reinstalled = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .fcm, token: "t-2")
        ).device
        _ = try await store.setInterests(instanceID: instance, deviceID: reinstalled.id, interests: ["only-other"])
        // The same user on both (a phone reinstalled and restored): the move is allowed.
        _ = try await store.setUser(instanceID: instance, deviceID: old.id, userID: "u2", maxDevicesPerUser: 100)
        _ = try await store.setUser(
            instanceID: instance, deviceID: reinstalled.id, userID: "u2", maxDevicesPerUser: 100)
        // Same token on another platform and in another instance: not touched.
        let apns = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .apns, token: "t-2")
        ).device
        let elsewhere = try await store.registerDevice(
            DeviceRegistration(instanceID: "other-instance", platform: .fcm, token: "t-2")
        ).device
        let updated = try await store.updateToken(instanceID: instance, deviceID: old.id, platform: .fcm, token: "t-2")
        #expect(updated)
        let gone = try await store.device(instanceID: instance, id: reinstalled.id)
        #expect(gone == nil, "the device that held the token is deleted")
        let holder = try await store.device(instanceID: instance, platform: .fcm, token: "t-2")
        #expect(holder?.id == old.id)
        let orphanInterest = try await store.subscriberCount(instanceID: instance, interest: "only-other")
        #expect(orphanInterest == 0)
        let userDevices = try await store.devices(instanceID: instance, userID: "u2").map(\.id)
        #expect(userDevices == [old.id])
        let keptAPNs = try await store.device(instanceID: instance, id: apns.id)
        #expect(keptAPNs?.token == "t-2")
        let keptElsewhere = try await store.device(instanceID: "other-instance", id: elsewhere.id)
        #expect(keptElsewhere?.token == "t-2")
        // A new device fits under a limit of 3 again: the deleted one no longer counts.
        let fits = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .fcm, token: "t-3"), maxDevicesPerInstance: 3)
        #expect(fits.created)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUpdateTokenRefusesATokenOfALiveDeviceBoundToAnotherUser(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let victim = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .fcm, token: "victim")
        ).device
        _ = try await store.setInterests(instanceID: instance, deviceID: victim.id, interests: ["private"])
        _ = try await store.setUser(
            instanceID: instance, deviceID: victim.id, userID: "victim-user", maxDevicesPerUser: 100)
        let attacker = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .fcm, token: "a-1")
        ).device
        let anonymous = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: .fcm, token: "a-2")
        ).device
        _ = try await store.setUser(
            instanceID: instance, deviceID: attacker.id, userID: "attacker-user", maxDevicesPerUser: 100)
        for thief in [attacker, anonymous] {
            do {
                _ = try await store.updateToken(
                    instanceID: instance, deviceID: thief.id, platform: .fcm, token: "victim")
                Issue.record("the token of a device bound to another user must not move")
            } catch PushStoreError.tokenHeldByAnotherUser {}
            let kept = try await store.device(instanceID: instance, id: thief.id)
            #expect(kept?.token != "victim")
        }
        let owner = try await store.device(instanceID: instance, platform: .fcm, token: "victim")
        #expect(owner?.id == victim.id)
        #expect(owner?.userID == "victim-user")
        let followers = try await store.subscriberCount(instanceID: instance, interest: "private")
        #expect(followers == 1)
        // Once the provider invalidated the victim's device, the token is free to move.
        let job = PublishJob(
            instanceID: instance, publishID: "p", kind: .users, targets: ["victim-user"], payload: Data(),
            createdAt: clock.now)
        let page = try await store.targets(for: job, after: 0, limit: 10)
        let target = try #require(page.targets.first)
        clock.advance(1)
        try await store.recordDeviceResults([
            DeviceResult(
                device: target.ref, status: 400, reason: "BadDeviceToken", at: clock.now, effect: .badToken)
        ])
        let moved = try await store.updateToken(
            instanceID: instance, deviceID: attacker.id, platform: .fcm, token: "victim")
        #expect(moved)
        let gone = try await store.device(instanceID: instance, id: victim.id)
        #expect(gone == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUpdateTokenReportsUnknownDeviceOrWrongPlatform(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let missing = try await store.updateToken(
            instanceID: instance, deviceID: "fcm-missing", platform: .fcm, token: "x")
        #expect(!missing)
        let apns = try await register(store, 1)
        let wrongPlatform = try await store.updateToken(
            instanceID: instance, deviceID: apns.id, platform: .fcm, token: "x")
        #expect(!wrongPlatform)
        let otherInstance = try await store.updateToken(
            instanceID: "other-instance", deviceID: apns.id, platform: .apns, token: token(2))
        #expect(!otherInstance)
        let unchanged = try await store.device(instanceID: instance, id: apns.id)
        #expect(unchanged?.token == token(1))
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testInterestMutationsReportMissingDevice(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let value10 = try await store.setInterests(instanceID: instance, deviceID: "apns-missing", interests: ["a"])
        #expect(!value10)
        let value11 = try await store.addInterest(instanceID: instance, deviceID: "apns-missing", interest: "a")
        #expect(!value11)
        let value12 = try await store.removeInterest(instanceID: instance, deviceID: "apns-missing", interest: "a")
        #expect(!value12)
        let page = try await store.interests(instanceID: instance, deviceID: "apns-missing", limit: 10, cursor: nil)
        #expect(page == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testAddRemoveAndSetInterestsAreIdempotent(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        let value13 = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "a")
        #expect(value13)
        let value14 = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "a")
        #expect(value14)
        let value15 = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "b")
        #expect(value15)
        let value16 = try await store.removeInterest(instanceID: instance, deviceID: device.id, interest: "b")
        #expect(value16)
        let value17 = try await store.removeInterest(instanceID: instance, deviceID: device.id, interest: "never")
        #expect(value17)
        var page = try await store.interests(instanceID: instance, deviceID: device.id, limit: 100, cursor: nil)
        #expect(page?.interests == ["a"])
        let value18 = try await store.setInterests(
            instanceID: instance, deviceID: device.id, interests: ["z", "y", "z"])
        #expect(value18)
        page = try await store.interests(instanceID: instance, deviceID: device.id, limit: 100, cursor: nil)
        #expect(page?.interests == ["y", "z"])
        #expect(page?.nextCursor == nil)
        let value19 = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: [])
        #expect(value19)
        page = try await store.interests(instanceID: instance, deviceID: device.id, limit: 100, cursor: nil)
        #expect(page?.interests == [])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testInterestPagingVisitsEveryInterestOnceAndCursorSurvivesChanges(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
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
        #expect(pages == 3)
        #expect(seen == names)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testSetUserRulesAndLimit(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let a = try await register(store, 1)
        let b = try await register(store, 2)
        let c = try await register(store, 3)
        let value20 = try await store.setUser(instanceID: instance, deviceID: a.id, userID: "u", maxDevicesPerUser: 2)
        #expect(value20 == .ok)
        let value21 = try await store.setUser(instanceID: instance, deviceID: a.id, userID: "u", maxDevicesPerUser: 2)
        #expect(value21 == .ok)
        let result1 = try await store.setUser(
            instanceID: instance, deviceID: a.id, userID: "other", maxDevicesPerUser: 2)
        #expect(result1 == .differentUserAlreadySet)
        let value22 = try await store.setUser(instanceID: instance, deviceID: b.id, userID: "u", maxDevicesPerUser: 2)
        #expect(value22 == .ok)
        let result2 = try await store.setUser(instanceID: instance, deviceID: c.id, userID: "u", maxDevicesPerUser: 2)
        #expect(result2 == .userHasTooManyDevices)
        let result3 = try await store.setUser(
            instanceID: instance, deviceID: "apns-missing", userID: "u", maxDevicesPerUser: 2)
        #expect(result3 == .deviceNotFound)
        let value23 = try await store.devices(instanceID: instance, userID: "u").map(\.id)
        #expect(value23 == [a.id, b.id])
        let value24 = try await store.device(instanceID: instance, id: c.id)?.userID
        #expect(value24 == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDeleteUserRemovesOnlyThatUsersDevicesAndTheirInterests(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let a = try await register(store, 1)
        let b = try await register(store, 2)
        let c = try await register(store, 3)
        for device in [a, b] {
            _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "u", maxDevicesPerUser: 100)
            _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "news")
        }
        _ = try await store.addInterest(instanceID: instance, deviceID: c.id, interest: "news")
        let value25 = try await store.deleteUser(instanceID: instance, userID: "u")
        #expect(value25 == 2)
        let value26 = try await store.deleteUser(instanceID: instance, userID: "u")
        #expect(value26 == 0)
        let value27 = try await store.device(instanceID: instance, id: a.id)
        #expect(value27 == nil)
        let value28 = try await store.device(instanceID: instance, id: c.id)
        #expect(value28 != nil)
        let value29 = try await store.subscriberCount(instanceID: instance, interest: "news")
        #expect(value29 == 1)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testBatchRegistrationIsOrderedAndIdempotent(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let batch = (0..<50).map { DeviceRegistration(instanceID: instance, token: token($0)) }
        let first = try await store.registerDevices(batch)
        let second = try await store.registerDevices(batch)
        #expect(first.map(\.device.token) == batch.map(\.token))
        #expect(first.allSatisfy { $0.created })
        #expect(!second.contains { $0.created })
        #expect(first.map(\.device.id) == second.map(\.device.id))
        try await store.close()
    }
}
