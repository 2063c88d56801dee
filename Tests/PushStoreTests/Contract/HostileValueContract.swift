import Foundation
import XCTest

import PushStore

/// Values from clients and peers that used to trap on their way into the store: dates past `Int64` milliseconds
/// (a reported `timestampSecs` of 9999999999999999), non-finite dates (an APNs `timestamp` of "nan"), page limits
/// at `Int.max`.
// 1e16 below is 9999999999999999 as a Double.
final class HostileValueContract: StoreContract {
    func testReportingEventDatedFarPastInt64MillisecondsIsStored() async throws {
        let store = try await openStore()
        let events = [
            ReportingEvent(instanceID: instance, publishID: "p", deviceID: "d1", userID: nil, kind: .delivery,
                           at: Date(timeIntervalSince1970: 1e16)),
            ReportingEvent(instanceID: instance, publishID: "p", deviceID: "d2", userID: "u", kind: .open,
                           at: Date(timeIntervalSince1970: -1e300)),
            ReportingEvent(instanceID: instance, publishID: "p", deviceID: "d3", userID: nil, kind: .open,
                           at: Date(timeIntervalSince1970: .nan)),
        ]
        let recorded = try await store.recordEvents(events)
        XCTAssertEqual(recorded, 3)
        _ = try await store.enqueuePublish(
            PublishJob(instanceID: instance, publishID: "p", kind: .interests, targets: ["a"], payload: Data(), createdAt: clock.now))
        let status = try await store.publishStatus(instanceID: instance, publishID: "p")
        XCTAssertEqual(status?.delivered, 1)
        XCTAssertEqual(status?.opened, 2)
        try await store.close()
    }

    func testDeviceResultWithNonFiniteEvidenceDateIsStored() async throws {
        let store = try await openStore()
        let device = try await register(store, 1)
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "u", maxDevicesPerUser: 10)
        let page = try await store.targets(
            for: PublishJob(instanceID: instance, publishID: "x", kind: .users, targets: ["u"], payload: Data(), createdAt: clock.now),
            after: 0, limit: 10)
        let key = try XCTUnwrap(page.targets.first?.ref)
        try await store.recordDeviceResults([
            DeviceResult(device: key, status: 410, reason: "Unregistered", at: clock.now,
                         effect: .unregistered(since: Date(timeIntervalSince1970: .infinity))),
        ])
        let stored = try await store.device(instanceID: instance, id: device.id)
        XCTAssertEqual(stored?.lastResult?.status, 410)
        XCTAssertNotNil(stored?.invalidatedAt, "evidence after the registration invalidates")
        try await store.close()
    }

    func testInterestPageWithLimitAtIntMaxDoesNotOverflow() async throws {
        let store = try await openStore()
        let device = try await register(store, 1)
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["a", "b"])
        let page = try await store.interests(instanceID: instance, deviceID: device.id, limit: .max, cursor: nil)
        XCTAssertEqual(page?.interests, ["a", "b"])
        XCTAssertNil(page?.nextCursor)
        try await store.close()
    }

    func testLeasesPastInt64MillisecondsSaturateInsteadOfTrapping() async throws {
        let store = try await openStore()
        let forever = Duration.seconds(Int64.max)
        let id = try await store.enqueuePublish(
            PublishJob(instanceID: instance, publishID: "p", kind: .interests, targets: ["a"], payload: Data(), createdAt: clock.now))
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: forever, now: clock.now)
        XCTAssertEqual(claimed?.id, id)
        try await store.renewLease(id, workerID: "w1", leaseDuration: forever, now: clock.now)
        clock.advance(1e9)
        let stolen = try await store.claimJob(workerID: "w2", leaseDuration: .seconds(30), now: clock.now)
        XCTAssertNil(stolen, "a saturated lease never expires")
        _ = try await store.enqueueWebhook(WebhookRequest(url: "http://127.0.0.1:1/", body: Data()), now: clock.now)
        let due = try await store.dueWebhooks(now: clock.now, limit: 10, leaseDuration: forever)
        XCTAssertEqual(due.count, 1)
        let again = try await store.dueWebhooks(now: clock.now.addingTimeInterval(1e9), limit: 10, leaseDuration: .seconds(1))
        XCTAssertEqual(again, [], "hidden until the end of time")
        try await store.close()
    }
}
