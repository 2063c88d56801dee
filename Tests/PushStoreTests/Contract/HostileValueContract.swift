import Foundation
import PushStore
import Testing

/// Values from clients and peers that used to trap on their way into the store: dates past `Int64` milliseconds
/// (a reported `timestampSecs` of 9999999999999999), non-finite dates (an APNs `timestamp` of "nan"), page limits
/// at `Int.max`.
// 1e16 below is 9999999999999999 as a Double.
final class HostileValueContract: StoreContract {
    @Test(arguments: ContractBackend.selected)
    func testReportingEventDatedFarPastInt64MillisecondsIsStored(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let events = [
            ReportingEvent(
                instanceID: instance, publishID: "p", deviceID: "d1", userID: nil, kind: .delivery,
                at: Date(timeIntervalSince1970: 1e16)),
            ReportingEvent(
                instanceID: instance, publishID: "p", deviceID: "d2", userID: "u", kind: .open,
                at: Date(timeIntervalSince1970: -1e300)),
            ReportingEvent(
                instanceID: instance, publishID: "p", deviceID: "d3", userID: nil, kind: .open,
                at: Date(timeIntervalSince1970: .nan)),
        ]
        let recorded = try await store.recordEvents(events)
        #expect(recorded == 3)
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "p", kind: .interests, targets: ["a"], payload: Data(),
                createdAt: clock.now))
        let status = try await store.publishStatus(instanceID: instance, publishID: "p")
        #expect(status?.delivered == 1)
        #expect(status?.opened == 2)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testDeviceResultWithNonFiniteEvidenceDateIsStored(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "u", maxDevicesPerUser: 10)
        let page = try await store.targets(
            for: PublishJob(
                instanceID: instance, publishID: "x", kind: .users, targets: ["u"], payload: Data(),
                createdAt: clock.now),
            after: 0, limit: 10)
        let key = try #require(page.targets.first?.ref)
        try await store.recordDeviceResults([
            unregistered(key, since: Date(timeIntervalSince1970: .infinity))
        ])
        let stored = try await store.device(instanceID: instance, id: device.id)
        #expect(stored?.lastResult?.status == 410)
        #expect(stored?.invalidatedAt != nil, "evidence after the registration invalidates")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testInterestPageWithLimitAtIntMaxDoesNotOverflow(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["a", "b"])
        let page = try await store.interests(instanceID: instance, deviceID: device.id, limit: .max, cursor: nil)
        #expect(page?.interests == ["a", "b"])
        #expect(page?.nextCursor == nil)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testLeasesPastInt64MillisecondsSaturateInsteadOfTrapping(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let forever = Duration.seconds(Int64.max)
        let id = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "p", kind: .interests, targets: ["a"], payload: Data(),
                createdAt: clock.now))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: forever, now: clock.now)
        #expect(claimed?.id == id)
        try await store.renewLease(id, workerID: "w1", leaseDuration: forever, now: clock.now)
        clock.advance(1e9)
        let stolen = try await store.claimJob(workerID: "w2", leaseDuration: .seconds(30), now: clock.now)
        #expect(stolen == nil, "a saturated lease never expires")
        _ = try await store.enqueueWebhook(WebhookRequest(url: "http://127.0.0.1:1/", body: Data()), now: clock.now)
        let due = try await store.dueWebhooks(now: clock.now, limit: 10, leaseDuration: forever)
        #expect(due.count == 1)
        let again = try await store.dueWebhooks(
            now: clock.now.addingTimeInterval(1e9), limit: 10, leaseDuration: .seconds(1))
        #expect(again == [], "hidden until the end of time")
        try await store.close()
    }
}
