import Foundation
import PushStore
import Testing

/// The bounds the internet-facing APIs rely on: devices per instance, and the facts the reporting API checks events
/// against.
final class StoreBoundsContract: StoreContract {
    /// A registration of token `n` in `instanceID`, capped at `cap` devices.
    private func register(_ store: any PushStorage, _ n: Int, cap: Int, in instanceID: String? = nil) async throws
        -> RegisteredDevice
    {
        try await store.registerDevice(
            DeviceRegistration(instanceID: instanceID ?? instance, token: token(n)),
            maxDevicesPerInstance: cap)
    }

    // MARK: Devices per instance

    @Test(arguments: ContractBackend.selected)
    func testNewTokenBeyondTheInstanceCapIsRefusedWhileKnownTokensStillReRegister(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        let first = try await register(store, 1, cap: 2)
        _ = try await register(store, 2, cap: 2)
        await #expect(throws: PushStoreError.deviceLimitReached) { _ = try await self.register(store, 3, cap: 2) }
        let again = try await register(store, 1, cap: 2)
        #expect(!again.created)
        #expect(again.device.id == first.device.id)
        // Another instance has its own count.
        _ = try await register(store, 3, cap: 1, in: "another-instance")
        await #expect(throws: PushStoreError.deviceLimitReached) {
            _ = try await self.register(store, 4, cap: 1, in: "another-instance")
        }
        // The refused registration left nothing behind.
        let missing = try await store.device(instanceID: instance, platform: .apns, token: token(3))
        #expect(missing == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testTheCountFollowsEveryKindOfDeletionSoFreedPlacesCanBeReused(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let a = try await register(store, 1, cap: 3)
        let b = try await register(store, 2, cap: 3)
        _ = try await register(store, 3, cap: 3)
        await #expect(throws: PushStoreError.deviceLimitReached) { _ = try await self.register(store, 9, cap: 3) }
        let deleted = try await store.deleteDevice(instanceID: instance, id: a.device.id)
        #expect(deleted)
        _ = try await register(store, 4, cap: 3)  // the deleted device's place
        _ = try await store.setUser(instanceID: instance, deviceID: b.device.id, userID: "u", maxDevicesPerUser: 10)
        let removed = try await store.deleteUser(instanceID: instance, userID: "u")
        #expect(removed == 1)
        // Retention deletes an invalidated device.
        let dead = try await register(store, 5, cap: 3)  // the deleted user's place
        await #expect(throws: PushStoreError.deviceLimitReached) { _ = try await self.register(store, 9, cap: 3) }
        _ = try await store.setUser(
            instanceID: instance, deviceID: dead.device.id, userID: "dead", maxDevicesPerUser: 10)
        let page = try await store.targets(
            for: PublishJob(
                instanceID: instance, publishID: "ref", kind: .users, targets: ["dead"], payload: Data(),
                createdAt: clock.now), after: 0, limit: 10)
        let ref = try #require(page.targets.first?.ref)
        clock.advance(1)  // a bad-token answer after the last registration invalidates the device
        try await store.recordDeviceResults([
            DeviceResult(
                device: ref, status: 400, reason: "BadDeviceToken", at: clock.now,
                effect: .badToken)
        ])
        await #expect(throws: PushStoreError.deviceLimitReached, "an invalidated device still counts") {
            _ = try await self.register(store, 9, cap: 3)
        }
        clock.advance(10)
        let purged = try await store.purge(before: clock.now, limit: 10)
        #expect(purged.devices == 1)
        _ = try await register(store, 6, cap: 3)
        await #expect(throws: PushStoreError.deviceLimitReached) { _ = try await self.register(store, 7, cap: 3) }
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUncappedRegistrationStillCounts(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        _ = try await store.registerDevices((1...5).map { DeviceRegistration(instanceID: instance, token: token($0)) })
        await #expect(throws: PushStoreError.deviceLimitReached) { _ = try await self.register(store, 6, cap: 5) }
        _ = try await register(store, 6, cap: 6)
        try await store.close()
    }

    // MARK: Subscriptions and distinct interest names per instance

    private func devices(_ store: any PushStorage, _ range: ClosedRange<Int>, in instanceID: String? = nil) async throws
        -> [String]
    {
        var ids: [String] = []
        for n in range { ids.append(try await register(store, n, cap: .max, in: instanceID).device.id) }
        return ids
    }

    private func names(_ store: any PushStorage, _ device: String, in instanceID: String? = nil) async throws
        -> [String]
    {
        try await store.interests(instanceID: instanceID ?? instance, deviceID: device, limit: 100, cursor: nil)?
            .interests ?? []
    }

    @Test(arguments: ContractBackend.selected)
    func testInterestWritesBeyondTheInstanceSubscriptionCapAreRefusedAndStoreNothing(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        let limits = InterestLimits(maxSubscriptionsPerInstance: 4, maxInterestsPerInstance: 1000)
        let d = try await devices(store, 1...3)
        _ = try await store.setInterests(
            instanceID: instance, deviceID: d[0], interests: ["a", "b", "c"], limits: limits)
        await #expect(throws: PushStoreError.subscriptionLimitReached, "3 + 2 > 4") {
            _ = try await store.setInterests(
                instanceID: self.instance, deviceID: d[1], interests: ["a", "b"], limits: limits)
        }
        let refusedSet = try await names(store, d[1])
        #expect(refusedSet == [], "a refused write stores nothing")
        _ = try await store.addInterest(instanceID: instance, deviceID: d[1], interest: "a", limits: limits)  // 4
        await #expect(throws: PushStoreError.subscriptionLimitReached) {
            _ = try await store.addInterest(instanceID: self.instance, deviceID: d[2], interest: "a", limits: limits)
        }
        // At the cap, what does not grow passes: an interest already followed, a smaller set.
        _ = try await store.addInterest(instanceID: instance, deviceID: d[0], interest: "a", limits: limits)
        _ = try await store.setInterests(instanceID: instance, deviceID: d[0], interests: ["z"], limits: limits)  // 2
        // 4 again:
        _ = try await store.setInterests(instanceID: instance, deviceID: d[2], interests: ["a", "b"], limits: limits)
        // A deleted device frees its subscriptions.
        _ = try await store.deleteDevice(instanceID: instance, id: d[0])  // 3
        _ = try await store.addInterest(instanceID: instance, deviceID: d[2], interest: "c", limits: limits)  // 4
        await #expect(throws: PushStoreError.subscriptionLimitReached) {
            _ = try await store.addInterest(instanceID: self.instance, deviceID: d[2], interest: "d", limits: limits)
        }
        let kept = try await names(store, d[2])
        #expect(kept == ["a", "b", "c"])
        // Another instance has its own count.
        let other = try await devices(store, 4...4, in: "another-instance")
        _ = try await store.setInterests(
            instanceID: "another-instance", deviceID: other[0], interests: ["a", "b", "c", "d"],
            limits: limits)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDistinctInterestNamesBeyondTheInstanceCapAreRefusedAndUnfollowedNamesFreeTheirPlace(
        _ backend: ContractBackend
    ) async throws {
        let store = try await openStore(backend)
        let limits = InterestLimits(maxSubscriptionsPerInstance: 1000, maxInterestsPerInstance: 3)
        let d = try await devices(store, 1...2)
        _ = try await store.setInterests(
            instanceID: instance, deviceID: d[0], interests: ["a", "b", "c"], limits: limits)
        _ = try await store.setInterests(instanceID: instance, deviceID: d[1], interests: ["a", "b"], limits: limits)
        await #expect(throws: PushStoreError.interestLimitReached, "a, b, c are still followed: d is a fourth") {
            _ = try await store.setInterests(
                instanceID: self.instance, deviceID: d[1], interests: ["d"], limits: limits)
        }
        let unchanged = try await names(store, d[1])
        #expect(unchanged == ["a", "b"])
        // c loses its last follower and is deleted, which frees its place.
        _ = try await store.setInterests(instanceID: instance, deviceID: d[0], interests: ["a"], limits: limits)
        _ = try await store.addInterest(instanceID: instance, deviceID: d[1], interest: "d", limits: limits)
        await #expect(throws: PushStoreError.interestLimitReached) {
            _ = try await store.addInterest(instanceID: self.instance, deviceID: d[0], interest: "e", limits: limits)
        }
        _ = try await store.removeInterest(instanceID: instance, deviceID: d[1], interest: "d")
        _ = try await store.addInterest(instanceID: instance, deviceID: d[0], interest: "e", limits: limits)
        // Deleting a device drops the names only it followed (b), through the cascade.
        _ = try await store.deleteDevice(instanceID: instance, id: d[1])  // a, e
        _ = try await store.addInterest(instanceID: instance, deviceID: d[0], interest: "f", limits: limits)
        await #expect(throws: PushStoreError.interestLimitReached) {
            _ = try await store.addInterest(instanceID: self.instance, deviceID: d[0], interest: "g", limits: limits)
        }
        let kept = try await names(store, d[0])
        #expect(kept == ["a", "e", "f"])
        // Unlimited writes (seeding) still count, so a later capped write sees them.
        let more = try await devices(store, 3...3)
        _ = try await store.setInterests(instanceID: instance, deviceID: more[0], interests: ["x", "y"])  // 5 names
        await #expect(throws: PushStoreError.interestLimitReached) {
            _ = try await store.addInterest(instanceID: self.instance, deviceID: more[0], interest: "z", limits: limits)
        }
        try await store.close()
    }

    // MARK: Reporting facts

    @Test(arguments: ContractBackend.selected)
    func testReportFactsNameTheDeviceThePublishAndWhetherItTargetedTheDevicesUser(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        let device = try await register(store, 1, cap: 10).device
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "alice", maxDevicesPerUser: 10)
        let follower = try await register(store, 2, cap: 10).device
        _ = try await store.setInterests(instanceID: instance, deviceID: follower.id, interests: ["sport", "weather"])
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["other"])
        let created = clock.now
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "to-alice", kind: .users,
                targets: ["bob", "alice"], payload: Data(), createdAt: created))
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "to-bob", kind: .users,
                targets: ["bob"], payload: Data(), createdAt: created))
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "news", kind: .interests,
                targets: ["alice"], payload: Data(), createdAt: created))
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "sport", kind: .interests,
                targets: ["news", "weather"], payload: Data(), createdAt: created))
        clock.advance(5)
        _ = try await store.claimJob(workerID: "w", leaseDuration: .seconds(30), now: clock.now)

        let facts = try await store.reportFacts(instanceID: instance, deviceID: device.id, publishID: "to-alice")
        #expect(facts.device?.id == device.id)
        #expect(facts.device?.userID == "alice")
        #expect(
            facts.publish
                == ReportedPublish(
                    kind: .users, createdAt: created, startedAt: clock.now,
                    finishedAt: nil, targetsDevice: true))
        let other = try await store.reportFacts(instanceID: instance, deviceID: device.id, publishID: "to-bob")
        #expect(other.publish?.targetsDevice == false)
        #expect(other.publish?.startedAt == nil, "still queued")
        let interests = try await store.reportFacts(instanceID: instance, deviceID: device.id, publishID: "news")
        #expect(interests.publish?.targetsDevice == false, "an interest named like the user is not a user target")
        let followed = try await store.reportFacts(instanceID: instance, deviceID: follower.id, publishID: "sport")
        #expect(followed.publish?.targetsDevice == true, "the device follows one of the publish's interests")
        let notFollowed = try await store.reportFacts(instanceID: instance, deviceID: device.id, publishID: "sport")
        #expect(notFollowed.publish?.targetsDevice == false)
        let noUser = try await store.reportFacts(instanceID: instance, deviceID: follower.id, publishID: "to-alice")
        #expect(noUser.publish?.targetsDevice == false)

        let unknown = try await store.reportFacts(instanceID: instance, deviceID: "apns-nope", publishID: "pubid-nope")
        #expect(unknown == ReportFacts(device: nil, publish: nil))
        let otherInstance = try await store.reportFacts(
            instanceID: "another-instance", deviceID: device.id, publishID: "to-alice")
        #expect(otherInstance == ReportFacts(device: nil, publish: nil), "both lookups are scoped by instance")
        try await store.close()
    }
}
