import Foundation
import PushStore
import Testing

/// The backend's lifetime: the write probe, and what `close()` leaves behind.
final class StoreBackendContract: StoreContract {
    @Test(arguments: ContractBackend.selected)
    func testProbeWriteSucceedsAndChangesNoData(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        try await store.probeWrite()
        let after = try await store.device(instanceID: instance, id: device.id)
        #expect(after == device)
        let depth = try await store.queueDepth()
        #expect(depth == 0)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testOperationsAfterCloseThrowClosed(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        try await store.close()
        try await store.close()
        await #expect(throws: PushStoreError.closed) { _ = try await self.register(store, 1) }
        await #expect(throws: PushStoreError.closed) { _ = try await store.queueDepth() }
        await #expect(throws: PushStoreError.closed) { try await store.probeWrite() }
        await #expect(throws: PushStoreError.closed) {
            _ = try await store.enqueueWebhook(
                WebhookRequest(url: "http://127.0.0.1:1/", body: Data()), now: self.clock.now)
        }
    }

    @Test(arguments: ContractBackend.selected)
    func testCommittedWritesSurviveClosingAndReopening(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: ["news"])
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "p1", kind: .interests, targets: ["news"], payload: Data("x".utf8),
                createdAt: clock.now))
        try await store.close()
        let reopened = try await openStore(backend)
        let kept = try await reopened.device(instanceID: instance, id: device.id)
        #expect(kept == device)
        let subscribers = try await reopened.subscriberCount(instanceID: instance, interest: "news")
        #expect(subscribers == 1)
        let claimed = try await reopened.claimJob(workerID: "w", leaseDuration: .seconds(30), now: clock.now)
        #expect(claimed?.job.payload == Data("x".utf8))
        try await reopened.close()
    }
}
