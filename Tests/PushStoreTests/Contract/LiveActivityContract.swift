import Foundation
import PushStore
import Testing

final class LiveActivityContract: StoreContract {
    private let limits = LiveActivityLimits(maxStartTokensPerDevice: 2, maxActivitiesPerDevice: 2)

    private func job(_ kind: PublishKind, _ targets: [String]) -> PublishJob {
        PublishJob(
            instanceID: instance, publishID: "p", kind: kind, targets: targets, payload: Data(), createdAt: clock.now)
    }

    private func putUpdate(
        _ store: any PushStorage, _ device: String, _ activity: String, token: String,
        type: String = "Match", hours: Double = 12
    ) async throws -> LiveActivityPutResult {
        try await store.putLiveActivityUpdateToken(
            instanceID: instance, deviceID: device, activityID: activity, attributesType: type, token: token,
            reference: "order-1", expiresAt: clock.now.addingTimeInterval(hours * 3600), limits: limits, now: clock.now)
    }

    @Test(arguments: ContractBackend.selected)
    func testStartTokensUpsertPerAttributesTypeAndAreBounded(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        let put = { (type: String, token: String) in
            try await store.putLiveActivityStartToken(
                instanceID: self.instance, deviceID: device.id, attributesType: type,
                token: token, limits: self.limits, now: self.clock.now)
        }
        let first = try await put("Match", "aa01")
        #expect(first == .stored(created: true))
        let rotated = try await put("Match", "aa02")
        #expect(rotated == .stored(created: false))
        let second = try await put("Delivery", "bb01")
        #expect(second == .stored(created: true))
        let third = try await put("Ride", "cc01")
        #expect(third == .limitReached(2))
        let unknown = try await store.putLiveActivityStartToken(
            instanceID: instance, deviceID: "apns-unknown", attributesType: "Match", token: "aa", limits: limits,
            now: clock.now)
        #expect(unknown == .deviceNotFound)

        let rows = try await store.liveActivityTokens(instanceID: instance, deviceID: device.id)
        #expect(rows?.map(\.attributesType) == ["Delivery", "Match"])
        #expect(rows?.map(\.token) == ["bb01", "aa02"])
        #expect(rows?.map(\.kind) == [.start, .start])
        #expect(rows?.first?.expiresAt == nil)
        let listUnknown = try await store.liveActivityTokens(instanceID: instance, deviceID: "apns-unknown")
        #expect(listUnknown == nil)

        let deleted = try await store.deleteLiveActivityToken(
            instanceID: instance, deviceID: device.id, kind: .start, name: "Match")
        #expect(deleted == true)
        let again = try await store.deleteLiveActivityToken(
            instanceID: instance, deviceID: device.id, kind: .start, name: "Match")
        #expect(again == false)
        let none = try await store.deleteLiveActivityToken(
            instanceID: instance, deviceID: "apns-x", kind: .start, name: "Match")
        #expect(none == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUpdateTokensUpsertPerActivityAndExpiredOnesDoNotCountAgainstTheBound(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        let a = try await putUpdate(store, device.id, "A", token: "0a01")
        #expect(a == .stored(created: true))
        let rotated = try await putUpdate(store, device.id, "A", token: "0a02")
        #expect(rotated == .stored(created: false))
        let b = try await putUpdate(store, device.id, "B", token: "0b01", hours: 1)
        #expect(b == .stored(created: true))
        let full = try await putUpdate(store, device.id, "C", token: "0c01")
        #expect(full == .limitReached(2))
        clock.advance(2 * 3600)  // B expired
        let c = try await putUpdate(store, device.id, "C", token: "0c01")
        #expect(c == .stored(created: true))
        let rows = try await store.liveActivityTokens(instanceID: instance, deviceID: device.id)
        #expect(rows?.map(\.activityID) == ["A", "C"])
        #expect(rows?.first?.token == "0a02")
        #expect(rows?.first?.reference == "order-1")
        #expect(rows?.first?.kind == .update)
        let ended = try await store.deleteLiveActivityToken(
            instanceID: instance, deviceID: device.id, kind: .update, name: "A")
        #expect(ended == true)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testTargetsAreTheMatchingUnexpiredRowsOfValidDevicesInRefOrder(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let one = try await register(store, 1)
        let two = try await register(store, 2)
        let other = try await register(store, 3)
        _ = try await store.addInterest(instanceID: instance, deviceID: one.id, interest: "scores")
        _ = try await store.addInterest(instanceID: instance, deviceID: one.id, interest: "news")
        _ = try await store.addInterest(instanceID: instance, deviceID: two.id, interest: "scores")
        _ = try await store.setUser(instanceID: instance, deviceID: two.id, userID: "u2", maxDevicesPerUser: 10)
        for (device, token) in [(one, "1111"), (two, "2222"), (other, "3333")] {
            _ = try await store.putLiveActivityStartToken(
                instanceID: instance, deviceID: device.id, attributesType: "Match",
                token: token, limits: limits, now: clock.now)
        }
        _ = try await store.putLiveActivityStartToken(
            instanceID: instance, deviceID: one.id, attributesType: "Ride",
            token: "9999", limits: limits, now: clock.now)
        _ = try await putUpdate(store, one.id, "A1", token: "a111")
        _ = try await putUpdate(store, two.id, "A2", token: "a222", hours: 1)

        let start = LiveActivitySelector(kind: .start, attributesType: "Match")
        let page = try await store.liveActivityTargets(
            for: job(.interests, ["scores", "news"]), selector: start,
            after: 0, limit: 1, now: clock.now)
        #expect(page.targets.map(\.token) == ["1111"], "each row once although the device follows both")
        #expect(!page.isLast)
        #expect(page.targets.first?.deviceID == one.id)
        let rest = try await store.liveActivityTargets(
            for: job(.interests, ["scores", "news"]), selector: start,
            after: page.cursor, limit: 10, now: clock.now)
        #expect(rest.targets.map(\.token) == ["2222"])
        #expect(rest.isLast)
        #expect(rest.targets[0].ref > page.targets[0].ref)

        let update = LiveActivitySelector(kind: .update, attributesType: "Match")
        let byUser = try await store.liveActivityTargets(
            for: job(.users, ["u2"]), selector: update, after: 0, limit: 10,
            now: clock.now)
        #expect(byUser.targets.map(\.token) == ["a222"])
        #expect(byUser.targets.first?.userID == "u2")
        let oneActivity = LiveActivitySelector(kind: .update, attributesType: "Match", activityID: "A1")
        let only = try await store.liveActivityTargets(
            for: job(.interests, ["scores"]), selector: oneActivity, after: 0,
            limit: 10, now: clock.now)
        #expect(only.targets.map(\.token) == ["a111"])
        clock.advance(2 * 3600)
        let expired = try await store.liveActivityTargets(
            for: job(.users, ["u2"]), selector: update, after: 0, limit: 10,
            now: clock.now)
        #expect(expired.targets == [])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDeadTokensAreDeletedUnlessStoredAgainAndDevicesTakeTheirRowsAlong(_ backend: ContractBackend) async throws
    {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "scores")
        _ = try await putUpdate(store, device.id, "A", token: "0a01")
        _ = try await putUpdate(store, device.id, "B", token: "0b01")
        let update = LiveActivitySelector(kind: .update, attributesType: "Match")
        let targets = try await store.liveActivityTargets(
            for: job(.interests, ["scores"]), selector: update, after: 0,
            limit: 10, now: clock.now
        ).targets
        #expect(targets.count == 2)
        let evidence = clock.now
        clock.advance(5)
        _ = try await putUpdate(store, device.id, "B", token: "0b02")  // rotated after the evidence: kept
        clock.advance(5)
        let deleted = try await store.deleteDeadLiveActivityTokens(
            targets.map { LiveActivityTokenDeath(ref: $0.ref, since: evidence.addingTimeInterval(1)) })
        #expect(deleted == 1)
        let rows = try await store.liveActivityTokens(instanceID: instance, deviceID: device.id)
        #expect(rows?.map(\.activityID) == ["B"])
        let stillDevice = try await store.device(instanceID: instance, id: device.id)
        #expect(stillDevice != nil, "a dead activity token never removes the device")

        _ = try await store.deleteDevice(instanceID: instance, id: device.id)
        let again = try await register(store, 1)
        let fresh = try await store.liveActivityTokens(instanceID: instance, deviceID: again.id)
        #expect(fresh == [], "the deleted device's rows went with it")
        let left = try await store.liveActivityTargets(
            for: job(.interests, ["scores"]), selector: update, after: 0,
            limit: 10, now: clock.now)
        #expect(left.targets == [])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testPurgeDeletesExpiredUpdateTokensInSlicesAndKeepsStartTokens(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        _ = try await store.putLiveActivityStartToken(
            instanceID: instance, deviceID: device.id, attributesType: "Match",
            token: "5555", limits: limits, now: clock.now)
        _ = try await putUpdate(store, device.id, "A", token: "0a01", hours: 1)
        _ = try await putUpdate(store, device.id, "B", token: "0b01", hours: 1)
        clock.advance(3 * 3600)
        let first = try await store.purgeExpiredLiveActivityTokens(before: clock.now, limit: 1)
        #expect(first == 1)
        let second = try await store.purgeExpiredLiveActivityTokens(before: clock.now, limit: 10)
        #expect(second == 1)
        let rows = try await store.liveActivityTokens(instanceID: instance, deviceID: device.id)
        #expect(rows?.map(\.kind) == [.start])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testRowsSurviveARestartAndFcmDevicesHaveNone(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        _ = try await putUpdate(store, device.id, "A", token: "0a01")
        try await store.close()
        let reopened = try await openStore(backend)
        let rows = try await reopened.liveActivityTokens(instanceID: instance, deviceID: device.id)
        #expect(rows?.map(\.token) == ["0a01"])
        let fcm = try await reopened.registerDevice(
            DeviceRegistration(
                instanceID: instance, platform: .fcm, token: "fcm-token-1", environment: .production,
                environmentDeclared: false, bundleID: nil, metadata: "{}")
        ).device
        let put = try await reopened.putLiveActivityStartToken(
            instanceID: instance, deviceID: fcm.id, attributesType: "Match", token: "aa", limits: limits, now: clock.now
        )
        #expect(put == .deviceNotFound)
        try await reopened.close()
    }
}
