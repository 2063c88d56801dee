import APNsClient
import Foundation
import Locking
import TestSupport
import XCTest

/// A token store slow to answer (a database round trip, a store under load) holds up only the requests that need
/// the new token: the connection thread hands them to a task and keeps serving its other streams.
final class APNsTokenStoreWaitTests: MockAPNsTestCase {
    func testAnswersArriveOnAConnectionWhileAnotherRequestWaitsForTheTokenStore() async throws {
        let mock = try startMock()
        let store = GatedTokenStore()
        let clock = TestClock(Date())
        let client = try makeClient(connections: 1, tokenStore: store, clock: clock.closure)
        let signed = await send(client, alert(token(1, prefix: "c1")))
        XCTAssertEqual(signed.response?.status, 200, "\(signed)")

        // B goes out with the current token; the mock holds its answer a moment.
        let slow = token(2, prefix: "c1")
        try mock.setBehaviour(token: slow, .init(delayMs: 300))
        let answerB = WaitableState<APNsResult?>(nil)
        let (credentials, environment, alertB) = (credentials, environment, alert(slow))
        let requestB = Task {
            let result = await client.send(alertB, credentials: credentials, environment: environment)
            answerB.update { $0 = result }
        }
        _ = try mock.waitForRequests(count: 1, token: slow, timeout: 10)

        // 50 minutes on (the mock's clock first, as in APNsProviderTokenFloorTests), a new token is due and the
        // store does not answer until released: A waits for it.
        store.hold()
        _ = try mock.setConfig(.init(clockOffsetSeconds: 50 * 60))
        clock.advance(minutes: 50)
        let alertA = alert(token(3, prefix: "c1"))
        let requestA = Task { await client.send(alertA, credentials: credentials, environment: environment) }
        try await eventually("A's token call reached the store") { store.held == 1 }

        // B's answer arrives meanwhile: its connection thread is not blocked by A's store call.
        let arrived = await answerB.wait(until: { $0 != nil }, timeout: .seconds(10))
        XCTAssertTrue(arrived, "B's answer waited for the token store")
        XCTAssertEqual(store.held, 1, "A still waits for the store")
        store.release()
        await requestB.value
        XCTAssertEqual(answerB.read { $0 }?.response?.status, 200)
        let resultA = await requestA.value
        XCTAssertEqual(resultA.response?.status, 200, "\(resultA)")
        XCTAssertEqual(client.stats().tokenRefreshes, 2)
    }

    func testShutdownHandsBackARequestThatWaitedForTheTokenStore() async throws {
        _ = try startMock()
        let store = GatedTokenStore()
        store.hold()
        let client = try makeClient(connections: 1, tokenStore: store)
        let (credentials, environment, waiting) = (credentials, environment, alert(token(4, prefix: "c2")))
        let request = Task { await client.send(waiting, credentials: credentials, environment: environment) }
        try await eventually("the token call reached the store") { store.held == 1 }
        let shutdown = Task { await client.shutdown(gracePeriod: .seconds(0)) }
        try await Task.sleep(for: .milliseconds(50))
        store.release()
        let unanswered = await shutdown.value
        let result = await request.value
        // Either it came back in time to go out, or it is answered `.shutdown` and handed back for re-queueing.
        if case .failure(.shutdown) = result {
            XCTAssertEqual(unanswered.map(\.deviceToken), [token(4, prefix: "c2")])
        } else {
            XCTAssertEqual(result.response?.status, 200, "\(result)")
            XCTAssertEqual(unanswered.count, 0)
        }
    }
}

/// A `MemoryTokenStore` whose loads can be held until released (a store that is slow to answer).
private final class GatedTokenStore: ProviderTokenStore {
    private let inner = MemoryTokenStore()
    /// Whether loads wait, and how many wait now.
    private let gate = WaitableState((closed: false, held: 0))

    /// Loads from now on wait until `release`.
    func hold() { gate.update { $0.closed = true } }
    func release() { gate.update { $0.closed = false } }
    var held: Int { gate.read { $0.held } }

    func load(teamID: String, keyID: String) async throws -> StoredProviderToken? {
        gate.update { $0.held += 1 }
        await gate.waitIgnoringCancellation { !$0.closed }
        gate.update { $0.held -= 1 }
        return try await inner.load(teamID: teamID, keyID: keyID)
    }

    func compareAndSwap(
        teamID: String, keyID: String, expected: StoredProviderToken?, new: StoredProviderToken
    ) async throws -> StoredProviderToken {
        try await inner.compareAndSwap(teamID: teamID, keyID: keyID, expected: expected, new: new)
    }
}
