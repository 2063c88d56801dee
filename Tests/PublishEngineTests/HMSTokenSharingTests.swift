import Foundation
import InMemoryStore
import Locking
import PushStore
import XCTest

@testable import PublishEngine

/// The HMS OAuth token shared by nodes through the store: the pure rules (`HMSTokenState`) by moving the clock, and
/// `HMSAccessTokens` instances standing for nodes on one in-memory store (no sockets; the fetch is counted).
final class HMSTokenSharingTests: XCTestCase {
    private let t0 = 1_800_000_000

    private func token(_ value: String, issuedAt: Int, lifetime: Int = 3600) -> HMSSharedToken {
        .token(value: value, issuedAt: issuedAt, lifetime: lifetime)
    }

    func testStoredTokenIsAdoptedOnlyWhileValidForLongerThanTheRefreshMargin() {
        let state = HMSTokenState(owner: "a")
        let stored = token("t1", issuedAt: t0)
        XCTAssertEqual(state.need(now: t0), .consultStore, "nothing held yet")
        XCTAssertEqual(state.next(stored: stored, now: t0 + 3299), .adopt(stored))
        XCTAssertEqual(
            state.next(stored: stored, now: t0 + 3300), .claim(.claim(owner: "a", since: t0 + 3300)),
            "5 minutes before expiry the token is due: fetch rather than adopt")
        let short = token("t2", issuedAt: t0, lifetime: 60)
        XCTAssertEqual(state.next(stored: short, now: t0 + 29), .adopt(short), "a short-lived token: half its life")
        XCTAssertEqual(state.next(stored: short, now: t0 + 30), .claim(.claim(owner: "a", since: t0 + 30)))
        XCTAssertEqual(state.next(stored: nil, now: t0), .claim(.claim(owner: "a", since: t0)))
        XCTAssertEqual(
            state.next(stored: token("future", issuedAt: t0 + 600), now: t0),
            .claim(.claim(owner: "a", since: t0)), "a token issued in the future is not trusted")
    }

    func testAnotherNodesLiveClaimIsWaitedForAndALapsedOrReleasedOneIsTakenOver() {
        let state = HMSTokenState(owner: "a")
        XCTAssertEqual(state.next(stored: .claim(owner: "b", since: t0), now: t0 + 14), .wait(until: t0 + 15))
        XCTAssertEqual(
            state.next(stored: .claim(owner: "b", since: t0), now: t0 + 15),
            .claim(.claim(owner: "a", since: t0 + 15)), "a node that died mid-fetch blocks for 15 s at most")
        XCTAssertEqual(
            state.next(stored: .claim(owner: "released", since: 0), now: t0),
            .claim(.claim(owner: "a", since: t0)))
        XCTAssertEqual(
            state.next(stored: .claim(owner: "a", since: t0), now: t0 + 1),
            .claim(.claim(owner: "a", since: t0 + 1)), "our own leftover claim never makes us wait")
    }

    func testRejectedTokenIsNeverUsedOrAdoptedAgainButANewerStoredOneIs() {
        var state = HMSTokenState(owner: "a")
        let first = state.adopt(token("old", issuedAt: t0))!
        XCTAssertEqual(state.need(now: t0 + 10), .use(first))
        state.reject(generation: first.generation + 1)
        XCTAssertEqual(state.need(now: t0 + 10), .use(first), "a rejection of another generation changes nothing")
        state.reject(generation: first.generation)
        XCTAssertEqual(state.need(now: t0 + 10), .consultStore)
        XCTAssertEqual(
            state.next(stored: token("old", issuedAt: t0), now: t0 + 10),
            .claim(.claim(owner: "a", since: t0 + 10)), "the stored copy of the rejected token is replaced")
        let newer = token("new", issuedAt: t0 + 5)
        XCTAssertEqual(state.next(stored: newer, now: t0 + 10), .adopt(newer), "another node replaced it already")
        XCTAssertEqual(state.adopt(newer)?.generation, first.generation + 1)
        XCTAssertEqual(state.adoptions, 2)
        XCTAssertEqual(state.fetches, 0)
    }

    func testFailedFetchIsAnsweredWithoutAskingAgainWithinTheRetryPeriod() {
        var state = HMSTokenState(owner: "a", retryAfterFailure: 10)
        state.failed(.refused("invalid client_secret"), now: t0)
        XCTAssertEqual(state.need(now: t0 + 9), .fail(.refused("invalid client_secret")))
        XCTAssertEqual(state.need(now: t0 + 10), .consultStore)
        XCTAssertEqual(state.fetches, 1)
    }

    func testStoredRowsRoundTripAndForeignRowsAreNotTakenForTokens() {
        for shared in [token("a/b:c", issuedAt: t0, lifetime: 3600), .claim(owner: "n1", since: t0)] {
            XCTAssertEqual(HMSSharedToken(record: shared.record), shared)
        }
        XCTAssertNil(HMSSharedToken(record: ProviderTokenRecord(jwt: "eyJhbGciOiJFUzI1NiJ9.e30.sig", issuedAt: 1)))
        XCTAssertNil(HMSSharedToken(record: ProviderTokenRecord(jwt: "token:0:x", issuedAt: 1)))
        XCTAssertNil(HMSSharedToken(record: ProviderTokenRecord(jwt: "token:3600:", issuedAt: 1)))
        let key = HMSSharedToken.key(clientID: "104433211", clientSecret: "secret")
        XCTAssertEqual(key.teamID, "hms:104433211", "outside the APNs team ID shape (10 letters and digits)")
        XCTAssertTrue(key.keyID.hasPrefix("oauth-") && key.keyID.count == 22, key.keyID)
        XCTAssertFalse(key.keyID.contains("secret"))
        XCTAssertNotEqual(
            HMSSharedToken.key(clientID: "104433211", clientSecret: "other").keyID, key.keyID,
            "a wrong or rotated secret never shares the right secret's token")
    }

    // MARK: Nodes on one store

    private final class Huawei: Sendable {
        private let issued = Locked(0)
        let delay: UInt64
        let refuse: Bool
        init(delay: UInt64 = 30_000_000, refuse: Bool = false) {
            self.delay = delay
            self.refuse = refuse
        }
        var requests: Int { issued.withLock { $0 } }
        func node(_ store: InMemoryPushStore?, secret: String = "secret") -> HMSAccessTokens {
            let tokens = HMSAccessTokens(clientID: "104433211", clientSecret: secret, pollInterval: 0.01) { [self] in
                let n = issued.withLock {
                    $0 += 1; return $0
                }
                try? await Task.sleep(nanoseconds: delay)
                return refuse ? .failure(.refused("invalid client_secret")) : .success(("token-\(n)", 3600))
            }
            if let store { tokens.share(through: store) }
            return tokens
        }
    }

    func testTwoNodesAskingAtOnceMakeOneTokenRequestAndARestartedNodeMakesNone() async throws {
        let store = InMemoryPushStore()
        let huawei = Huawei()
        let (a, b) = (huawei.node(store), huawei.node(store))
        let values = Locked<Set<String>>([])
        await withTaskGroup(of: Void.self) { group in
            for node in [a, b, a, b, a, b, a, b] {
                group.addTask {
                    if case .success(let t) = await node.token() { values.withLock { _ = $0.insert(t.value) } }
                }
            }
        }
        XCTAssertEqual(huawei.requests, 1)
        XCTAssertEqual(values.withLock { $0 }, ["token-1"])
        XCTAssertEqual(a.fetchCount + b.fetchCount, 1)
        XCTAssertEqual(a.adoptCount + b.adoptCount, 1, "the other node waited for the claim and adopted the token")
        let restarted = huawei.node(store)
        let reused = try await restarted.token().get()
        XCTAssertEqual(reused.value, "token-1")
        XCTAssertEqual(huawei.requests, 1, "a restarted node reuses the stored token")
    }

    func testAnInstanceWithAnotherSecretForTheSameClientNeverAdoptsTheToken() async throws {
        let store = InMemoryPushStore()
        let huawei = Huawei(delay: 0)
        _ = try await huawei.node(store).token().get()
        let wrong = Huawei(delay: 0, refuse: true).node(store, secret: "not-the-secret")
        let refusal = await wrong.token().failureValue
        XCTAssertEqual(refusal, .refused("invalid client_secret"), "asked Huawei with its own secret, and was refused")
    }

    func testWithoutTheStoreEachNodeAsksForItsOwnToken() async {
        let huawei = Huawei()
        _ = await huawei.node(nil).token()
        _ = await huawei.node(nil).token()
        XCTAssertEqual(huawei.requests, 2, "the behaviour the store exists to prevent")
    }

    func testTokenRejectedOnBothNodesIsReplacedOnce() async throws {
        let store = InMemoryPushStore()
        let huawei = Huawei()
        let (a, b) = (huawei.node(store), huawei.node(store))
        let old = try await a.token().get()
        let oldOnB = try await b.token().get()
        XCTAssertEqual(old.value, oldOnB.value)
        let newOnA = try await a.token(rejecting: old.generation).get()
        let newOnB = try await b.token(rejecting: oldOnB.generation).get()
        XCTAssertEqual(huawei.requests, 2)
        XCTAssertEqual(newOnA.value, "token-2")
        XCTAssertEqual(newOnB.value, "token-2", "the second node adopts the replacement instead of fetching")
    }

    func testAFailedFetchReleasesItsClaimSoAnotherNodeNeedNotWaitForItToLapse() async throws {
        let store = InMemoryPushStore()
        let refused = Huawei(delay: 0, refuse: true).node(store)
        let huawei = Huawei(delay: 0)
        let refusal = await refused.token().failureValue
        XCTAssertEqual(refusal, .refused("invalid client_secret"))
        let key = HMSSharedToken.key(clientID: "104433211", clientSecret: "secret")
        let row = try await store.providerToken(teamID: key.teamID, keyID: key.keyID)
        XCTAssertEqual(
            row.flatMap(HMSSharedToken.init(record:)), .claim(owner: "released", since: 0),
            "no live claim left for other nodes to wait on")
        let other = try await huawei.node(store).token().get()
        XCTAssertEqual(other.value, "token-1")
    }
}

private extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
