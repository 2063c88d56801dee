import Foundation
import InMemoryStore
import PushStore
import Testing

/// What only the in-memory backend has: its row bound, injected outages, and reopening over the same data.
struct InMemoryPushStoreTests {
    private let instance = "0b9a5c1e-3f5a-4c2d-9e1b-7d8f6a5b4c3d"

    private func registration(_ n: Int) -> DeviceRegistration {
        DeviceRegistration(instanceID: instance, token: String(repeating: "b", count: 63) + String(n))
    }

    @Test func testRefusesRowsPastItsCapacityAsDiskFullAndStoresNothing() async throws {
        let store = InMemoryPushStore(capacity: 2)
        _ = try await store.registerDevice(registration(1))
        _ = try await store.registerDevice(registration(2))
        let full = StoreUnavailableError(.diskFull, detail: "in-memory store holds its capacity of 2 rows")
        await #expect(throws: full) { _ = try await store.registerDevice(self.registration(3)) }
        await #expect(throws: full) {
            _ = try await store.registerDevices([self.registration(1), self.registration(4)])
        }
        let kept = try await store.device(instanceID: instance, platform: .apns, token: registration(1).token)
        #expect(kept != nil, "a known token re-registers without a new row")
        let refused = try await store.device(instanceID: instance, platform: .apns, token: registration(4).token)
        #expect(refused == nil)
        let again = try await store.registerDevice(registration(1))
        #expect(!again.created)
    }

    @Test func testAnInjectedOutageRefusesEveryCallUntilCleared() async throws {
        let store = InMemoryPushStore()
        let outage = StoreUnavailableError(.ioError, detail: "injected")
        store.setUnavailable(outage)
        await #expect(throws: outage) { try await store.probeWrite() }
        await #expect(throws: outage) { _ = try await store.registerDevice(self.registration(1)) }
        store.setUnavailable(nil)
        try await store.probeWrite()
        let missing = try await store.device(instanceID: instance, platform: .apns, token: registration(1).token)
        #expect(missing == nil, "nothing was stored during the outage")
    }

    @Test func testReopenedStoreSeesTheDataWhileTheClosedOneStaysClosed() async throws {
        let store = InMemoryPushStore()
        let device = try await store.registerDevice(registration(1)).device
        try await store.close()
        let reopened = store.reopened()
        let found = try await reopened.device(instanceID: instance, id: device.id)
        #expect(found == device)
        await #expect(throws: PushStoreError.closed) { _ = try await store.queueDepth() }
    }
}
