import Foundation
import PushStore
import Testing

/// The daily publish quota (`PublishJob.dailyPublishQuota`) and `quotaUsage`: counted in the publish's
/// transaction, per instance and UTC day, a refused publish storing nothing.
final class QuotaContract: StoreContract {
    private func quotaPublish(_ id: String, quota: Int?, instanceID: String? = nil) -> PublishJob {
        PublishJob(
            instanceID: instanceID ?? instance, publishID: id, kind: .interests, targets: ["news"],
            payload: Data("payload-\(id)".utf8), createdAt: clock.now, dailyPublishQuota: quota)
    }

    private func usage(_ store: any PushStorage, _ instanceID: String? = nil) async throws -> QuotaUsage {
        let reader = try #require(store as? any QuotaUsageReading)
        return try await reader.quotaUsage(instanceID: instanceID ?? instance, day: UTCDay(containing: clock.now))
    }

    @Test(arguments: ContractBackend.selected)
    func testTheDailyQuotaRefusesThePublishPastItStoringNothingAndResetsAtMidnightUTC(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        // The test clock stands at 22:13:20 UTC.
        for n in 1...3 { _ = try await store.enqueuePublish(quotaPublish("p\(n)", quota: 3)) }
        do {
            _ = try await store.enqueuePublish(quotaPublish("p4", quota: 3))
            Issue.record("the fourth publish of the day passed a quota of 3")
        } catch PushStoreError.publishQuotaReached {}
        let refused = try await store.publishStatus(instanceID: instance, publishID: "p4")
        #expect(refused == nil, "a refused publish is not stored")
        let depth = try await store.queueDepth()
        #expect(depth == 3)
        var used = try await usage(store)
        #expect(used.publishes == 3, "the refused publish is not counted")
        // Another instance has its own count.
        _ = try await store.enqueuePublish(quotaPublish("q1", quota: 1, instanceID: "another-instance"))
        // One second before midnight: still the same day.
        clock.advance(6399)
        do {
            _ = try await store.enqueuePublish(quotaPublish("p5", quota: 3))
            Issue.record("a publish at 23:59:59 passed the day's quota")
        } catch PushStoreError.publishQuotaReached {}
        // 00:00:00 UTC: a new day, a new count.
        clock.advance(1)
        _ = try await store.enqueuePublish(quotaPublish("p6", quota: 3))
        used = try await usage(store)
        #expect(used.publishes == 1)
        // A publish without a quota is neither refused nor counted.
        _ = try await store.enqueuePublish(quotaPublish("p7", quota: nil))
        used = try await usage(store)
        #expect(used.publishes == 1)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testQuotaUsageCountsTheInstancesDevices(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        var used = try await usage(store)
        #expect(used == QuotaUsage(devices: 0, publishes: 0))
        for n in 1...4 { _ = try await register(store, n) }
        _ = try await register(store, 2)
        used = try await usage(store)
        #expect(used.devices == 4, "a re-registration is the same device")
        let other = try await usage(store, "another-instance")
        #expect(other.devices == 0)
        try await store.close()
    }
}
