import Foundation
import PushStore
import XCTest

/// The backend's lifetime: the write probe, and what `close()` leaves behind.
final class StoreBackendContract: StoreContract {
    func testProbeWriteSucceedsAndChangesNoData() async throws {
        let store = try await openStore()
        let device = try await register(store, 1)
        try await store.probeWrite()
        let after = try await store.device(instanceID: instance, id: device.id)
        XCTAssertEqual(after, device)
        let depth = try await store.queueDepth()
        XCTAssertEqual(depth, 0)
        try await store.close()
    }

    func testOperationsAfterCloseThrowClosed() async throws {
        let store = try await openStore()
        try await store.close()
        try await store.close()
        await XCTAssertThrowsAsync(PushStoreError.closed) { _ = try await self.register(store, 1) }
        await XCTAssertThrowsAsync(PushStoreError.closed) { _ = try await store.queueDepth() }
        await XCTAssertThrowsAsync(PushStoreError.closed) { try await store.probeWrite() }
        await XCTAssertThrowsAsync(PushStoreError.closed) {
            _ = try await store.enqueueWebhook(WebhookRequest(url: "http://127.0.0.1:1/", body: Data()), now: self.clock.now)
        }
    }

    func testCommittedWritesSurviveClosingAndReopening() async throws {
        let store = try await openStore()
        let device = try await register(store, 1)
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["news"])
        _ = try await store.enqueuePublish(
            PublishJob(instanceID: instance, publishID: "p1", kind: .interests, targets: ["news"], payload: Data("x".utf8),
                       createdAt: clock.now))
        try await store.close()
        let reopened = try await openStore()
        let kept = try await reopened.device(instanceID: instance, id: device.id)
        XCTAssertEqual(kept, device)
        let subscribers = try await reopened.subscriberCount(instanceID: instance, interest: "news")
        XCTAssertEqual(subscribers, 1)
        let claimed = try await reopened.claimJob(workerID: "w", leaseDuration: .seconds(30), now: clock.now)
        XCTAssertEqual(claimed?.job.payload, Data("x".utf8))
        try await reopened.close()
    }
}
