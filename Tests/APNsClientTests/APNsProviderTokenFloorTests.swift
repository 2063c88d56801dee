import APNsClient
import Foundation
import Locking
import TestSupport
import XCTest

/// Against a mock that enforces the 20-minute refresh floor per key across connections and client restarts, as
/// APNs has been seen to: a restarted process or another node must reuse the stored token, and a
/// `TooManyProviderTokenUpdates` answer delays a notification, never loses it.
final class APNsProviderTokenFloorTests: MockAPNsTestCase {
    private func startKeyFloorMock() throws -> MockAPNs {
        let mock = try startMock()
        _ = try mock.setConfig(.init(tokenFloorScope: .key))
        return mock
    }

    func testRestartedClientReusesTheStoredTokenAndTheKeyFloorAcceptsIt() async throws {
        let mock = try startKeyFloorMock()
        let store = MemoryTokenStore()
        let first = try makeClient(tokenStore: store)
        let before = await submitAll(first, (0..<20).map { alert(token($0, prefix: "b1")) })
        XCTAssertEqual(before.filter { $0.response?.status == 200 }.count, 20)
        _ = await first.shutdown(gracePeriod: .seconds(1))

        let restarted = try makeClient(tokenStore: store)  // a new process: new pools, new connections
        let after = await submitAll(restarted, (20..<40).map { alert(token($0, prefix: "b1")) })
        XCTAssertEqual(
            after.filter { $0.response?.status == 200 }.count, 20,
            "\(after.filter { $0.response?.status != 200 }.prefix(2))")
        XCTAssertEqual(restarted.stats().tokenRefreshes, 0)
        XCTAssertEqual(restarted.stats().tokensAdopted, 1)
        XCTAssertEqual(Set(try mock.requests().compactMap { $0.jwt?.iat }).count, 1)
        XCTAssertEqual(try mock.stats().byReason["TooManyProviderTokenUpdates"], nil)
    }

    func testRestartWithoutAStoreIsRefusedUntilTheFloorPassesAndLosesNothing() async throws {
        let mock = try startKeyFloorMock()
        let clock = TestClock(Date())
        let first = try makeClient(clock: clock.closure)
        let answered = await send(first, alert(token(0, prefix: "b2")))
        XCTAssertEqual(answered.response?.status, 200)
        _ = await first.shutdown(gracePeriod: .seconds(1))

        clock.advance(minutes: 1)
        let restarted = try makeClient(clock: clock.closure)  // signs its own token: APNs knows another
        let device = token(1, prefix: "b2")
        let box = ResultCollector(count: 1)
        await restarted.submit(alert(device), credentials: credentials, environment: environment) { box.record(0, $0) }
        _ = try mock.waitForRequests(count: 3, token: device, timeout: 10)
        XCTAssertEqual(Set(try mock.requests(token: device).map(\.status)), [429])
        XCTAssertEqual(restarted.stats().tokenRefreshes, 1, "never signs again within the floor")

        // 20 minutes after the rejected token: the client may sign again, and the mock accepts it. The mock's clock
        // moves first: a token signed between the two moves would otherwise be 21 minutes in the mock's future
        // (403 InvalidProviderToken), which a loaded machine made happen.
        _ = try mock.setConfig(.init(clockOffsetSeconds: 21 * 60))
        clock.advance(minutes: 20)
        let result = await box.all()[0]
        XCTAssertEqual(result.response?.status, 200, "\(result)")
        XCTAssertEqual(try mock.stats().sentPerToken[device]?["200"], 1)
        XCTAssertEqual(restarted.stats().tokenRefreshes, 2)
    }

    func testTooManyUpdatesAdoptsTheTokenAnotherNodeStored() async throws {
        let mock = try startKeyFloorMock()
        let store = MemoryTokenStore()
        let nodeA = try makeClient(tokenStore: store)
        let answered = await send(nodeA, alert(token(0, prefix: "b3")))
        XCTAssertEqual(answered.response?.status, 200)
        // Node B's writes fail (its own token never reaches the store), so it signs its own and APNs refuses it;
        // B then finds A's token in the store and re-sends with it at once.
        let failing = MemoryTokenStore()
        failing.failWrites = true
        let nodeB = try makeClient(tokenStore: SplitStore(reads: store, writes: failing))
        let started = Date()
        let result = await send(nodeB, alert(token(1, prefix: "b3")))
        XCTAssertEqual(result.response?.status, 200, "\(result)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertEqual(nodeB.stats().tokenUpdateRejections, 1)
        XCTAssertEqual(nodeB.stats().tokensAdopted, 1)
        XCTAssertEqual(try mock.requests(token: token(1, prefix: "b3")).map(\.status), [429, 200])
    }
}

/// Node B's view of the shared store: its first read comes before node A's token exists (so B signs its own),
/// and its writes fail (so its token never replaces A's).
private final class SplitStore: ProviderTokenStore {
    let reads: MemoryTokenStore
    let writes: MemoryTokenStore
    private let loads = Locked(0)

    init(reads: MemoryTokenStore, writes: MemoryTokenStore) {
        self.reads = reads
        self.writes = writes
    }

    func load(teamID: String, keyID: String) async throws -> StoredProviderToken? {
        let first = loads.withLock { count -> Bool in
            count += 1
            return count == 1
        }
        return first ? nil : try await reads.load(teamID: teamID, keyID: keyID)
    }

    func compareAndSwap(
        teamID: String, keyID: String, expected: StoredProviderToken?, new: StoredProviderToken
    ) async throws -> StoredProviderToken {
        try await writes.compareAndSwap(teamID: teamID, keyID: keyID, expected: expected, new: new)
    }
}
