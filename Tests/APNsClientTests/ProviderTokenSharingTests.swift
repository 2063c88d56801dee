import APNsClient
import Foundation
import Locking
import TestSupport
import XCTest

/// A `ProviderTokenStore` in memory with the same compare-and-swap rule as the push store, plus hooks to let
/// another writer in between a manager's read and its swap, and to fail writes.
final class MemoryTokenStore: ProviderTokenStore {
    struct Failure: Error {}

    private struct State {
        var tokens: [String: StoredProviderToken] = [:]
        var loads = 0
        var swaps = 0
        var failWrites = false
        var beforeSwap: (@Sendable () async -> Void)?
    }

    private let state = Locked(State())

    var loads: Int { state.withLock { $0.loads } }
    var swaps: Int { state.withLock { $0.swaps } }
    var failWrites: Bool {
        get { state.withLock { $0.failWrites } }
        set { state.withLock { $0.failWrites = newValue } }
    }

    /// Runs once, just before the next swap is applied.
    func beforeNextSwap(_ hook: @escaping @Sendable () async -> Void) { state.withLock { $0.beforeSwap = hook } }

    func token(teamID: String, keyID: String) -> StoredProviderToken? { state.withLock { $0.tokens[teamID + keyID] } }

    func put(_ token: StoredProviderToken, teamID: String, keyID: String) {
        state.withLock { $0.tokens[teamID + keyID] = token }
    }

    func load(teamID: String, keyID: String) async throws -> StoredProviderToken? {
        state.withLock { state in
            state.loads += 1
            return state.tokens[teamID + keyID]
        }
    }

    func compareAndSwap(
        teamID: String, keyID: String, expected: StoredProviderToken?, new: StoredProviderToken
    ) async throws -> StoredProviderToken {
        let hook = state.withLock { state -> (@Sendable () async -> Void)? in
            defer { state.beforeSwap = nil }
            return state.beforeSwap
        }
        await hook?()
        return try state.withLock { state in
            if state.failWrites { throw Failure() }
            state.swaps += 1
            if let stored = state.tokens[teamID + keyID], stored.jwt != expected?.jwt { return stored }
            state.tokens[teamID + keyID] = new
            return new
        }
    }
}

/// Signs distinct fake JWTs (`jwt-<iat>-<n>`) and counts them; the sharing rules need no real key.
final class FakeSigner: APNsProviderTokenSigning {
    let count = Locked(0)

    func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String {
        let n = count.withLock { count -> Int in
            count += 1
            return count
        }
        return "jwt-\(issuedAt)-\(n)"
    }

    var signed: Int { count.withLock { $0 } }
}

/// The pure rules for a token shared through a store: adopt, compare-and-swap, refresh at 50 minutes, and
/// `TooManyProviderTokenUpdates`.
final class ProviderTokenSharingStateTests: XCTestCase {
    private let t0 = 1_800_000_000

    func testFreshStoredTokenIsAdoptedInsteadOfSigning() {
        let state = ProviderTokenState()
        let stored = StoredProviderToken(jwt: "a", issuedAt: t0 - 10 * 60)
        XCTAssertEqual(state.token(now: t0), .mint(issuedAt: t0))
        XCTAssertEqual(state.refresh(stored: stored, now: t0), .adopt(stored))
        XCTAssertEqual(state.refresh(stored: nil, now: t0), .sign(issuedAt: t0))
    }

    func testStoredTokenDueForRefreshIsReplacedNotAdopted() {
        let state = ProviderTokenState()
        let old = StoredProviderToken(jwt: "a", issuedAt: t0 - 50 * 60)
        XCTAssertEqual(state.refresh(stored: old, now: t0), .sign(issuedAt: t0))
        let future = StoredProviderToken(jwt: "f", issuedAt: t0 + 120)  // beyond APNs' skew
        XCTAssertEqual(state.refresh(stored: future, now: t0), .sign(issuedAt: t0))
    }

    func testAdoptedTokenIsUsedUntilFiftyMinutesAfterItsIssueThenRefreshed() {
        var state = ProviderTokenState()
        let adopted = state.adopt(StoredProviderToken(jwt: "a", issuedAt: t0 - 30 * 60))
        XCTAssertEqual(state.adoptCount, 1)
        XCTAssertEqual(state.mintCount, 0)
        XCTAssertEqual(state.token(now: t0 + 19 * 60 + 59), .use(adopted))
        XCTAssertEqual(state.token(now: t0 + 20 * 60), .mint(issuedAt: t0 + 20 * 60))
        // Another node refreshed at 50 minutes already: adopt its token, sign nothing.
        let theirs = StoredProviderToken(jwt: "b", issuedAt: t0 + 20 * 60 - 5)
        XCTAssertEqual(state.refresh(stored: theirs, now: t0 + 20 * 60), .adopt(theirs))
        // The store still holds the token we use: sign.
        XCTAssertEqual(state.refresh(stored: adopted.stored, now: t0 + 20 * 60), .sign(issuedAt: t0 + 20 * 60))
    }

    func testNeverGoesBackToAnOlderStoredToken() {
        var state = ProviderTokenState()
        state.install(jwt: "new", issuedAt: t0)
        XCTAssertEqual(state.token(now: t0 + 50 * 60), .mint(issuedAt: t0 + 50 * 60))
        XCTAssertEqual(
            state.refresh(stored: StoredProviderToken(jwt: "older", issuedAt: t0 - 60), now: t0 + 50 * 60),
            .sign(issuedAt: t0 + 50 * 60))
    }

    func testCompareAndSwapLostAdoptsTheWinnersToken() {
        var state = ProviderTokenState()
        let ours = StoredProviderToken(jwt: "ours", issuedAt: t0)
        let theirs = StoredProviderToken(jwt: "theirs", issuedAt: t0 - 1)
        let token = state.settle(signed: ours, winner: theirs)
        XCTAssertEqual(token.jwt, "theirs")
        XCTAssertEqual(state.mintCount, 0)
        XCTAssertEqual(state.adoptCount, 1)
        XCTAssertEqual(state.settle(signed: ours, winner: ours).jwt, "ours", "won: our token")
        XCTAssertEqual(state.mintCount, 1)
    }

    func testTooManyUpdatesRetriesWithANewerTokenAtOnce() {
        var state = ProviderTokenState()
        let first = state.install(jwt: "a", issuedAt: t0)
        let second = state.adopt(StoredProviderToken(jwt: "b", issuedAt: t0 + 1))
        XCTAssertEqual(
            state.updateRejected(generation: first.generation, now: t0 + 2, storeChecked: false),
            .retryWith(second))
    }

    func testTooManyUpdatesReadsTheStoreThenAdoptsAnotherNodesToken() {
        var state = ProviderTokenState()
        let ours = state.install(jwt: "ours", issuedAt: t0)
        XCTAssertEqual(state.updateRejected(generation: ours.generation, now: t0 + 5, storeChecked: false), .checkStore)
        // APNs knows the other node's token, older or not: adopt it while it is valid.
        let theirs = StoredProviderToken(jwt: "theirs", issuedAt: t0 - 600)
        XCTAssertEqual(state.storeChecked(theirs, now: t0 + 5), theirs)
        XCTAssertNil(state.storeChecked(ours.stored, now: t0 + 5), "the store holds our own token")
        XCTAssertNil(state.storeChecked(StoredProviderToken(jwt: "x", issuedAt: t0 - 3601), now: t0 + 5), "expired")
    }

    func testTooManyUpdatesNeverSignsWithinTheFloorAndSignsAfterIt() {
        var state = ProviderTokenState()
        let ours = state.install(jwt: "ours", issuedAt: t0)
        _ = state.storeChecked(nil, now: t0 + 60)
        XCTAssertEqual(
            state.updateRejected(generation: ours.generation, now: t0 + 60, storeChecked: true),
            .wait(signableAt: t0 + 20 * 60))
        // The store is read again at most once per second however many requests are rejected.
        XCTAssertEqual(
            state.updateRejected(generation: ours.generation, now: t0 + 60, storeChecked: false),
            .wait(signableAt: t0 + 20 * 60))
        XCTAssertEqual(
            state.updateRejected(generation: ours.generation, now: t0 + 61, storeChecked: false), .checkStore)
        XCTAssertEqual(
            state.updateRejected(generation: ours.generation, now: t0 + 20 * 60, storeChecked: true),
            .mint(issuedAt: t0 + 20 * 60))
    }

    func testExpiredProviderTokenAdoptsANewerStoredTokenEvenWithinTheFloor() {
        var state = ProviderTokenState()
        let ours = state.install(jwt: "ours", issuedAt: t0)
        XCTAssertEqual(state.expired(generation: ours.generation, now: t0 + 300), .refuse(ageSeconds: 300))
        let theirs = StoredProviderToken(jwt: "theirs", issuedAt: t0 + 200)
        XCTAssertEqual(state.newerAfterExpiry(stored: theirs, now: t0 + 300), theirs)
        XCTAssertNil(state.newerAfterExpiry(stored: ours.stored, now: t0 + 300))
    }
}

/// The manager over a store: restarts and other nodes reuse one token per refresh period.
final class ProviderTokenSharingManagerTests: XCTestCase {
    private let teamID = "TEAM123456"
    private let keyID = "KEY1234567"

    private func manager(_ store: MemoryTokenStore?, _ signer: FakeSigner, _ clock: TestClock) -> ProviderTokenManager {
        ProviderTokenManager(
            credentials: APNsCredentials(teamID: teamID, keyID: keyID, key: signer), store: store,
            clock: clock.closure)
    }

    func testRestartedProcessReusesTheStoredTokenUntilFiftyMinutes() async throws {
        let store = MemoryTokenStore()
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let signer = FakeSigner()
        let first = try await manager(store, signer, clock).currentToken()
        XCTAssertEqual(store.token(teamID: teamID, keyID: keyID), first.stored, "stored before first use")

        clock.advance(minutes: 3)  // kill -9, restart: a new manager, the same store
        let restarted = manager(store, signer, clock)
        let reused = try await restarted.currentToken()
        XCTAssertEqual(reused.jwt, first.jwt)
        XCTAssertEqual(signer.signed, 1)
        XCTAssertEqual(restarted.adoptCount, 1)
        XCTAssertEqual(restarted.mintCount, 0)

        clock.advance(minutes: 47)  // 50 minutes after the first token's iat
        let refreshed = try await restarted.currentToken()
        XCTAssertNotEqual(refreshed.jwt, first.jwt)
        XCTAssertEqual(signer.signed, 2)
        XCTAssertEqual(store.token(teamID: teamID, keyID: keyID), refreshed.stored)
    }

    func testTwoNodesRefreshOncePerPeriod() async throws {
        let store = MemoryTokenStore()
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let signer = FakeSigner()
        let a = manager(store, signer, clock)
        let b = manager(store, signer, clock)
        let first = try await a.currentToken()
        let adopted = try await b.currentToken()
        XCTAssertEqual(adopted.stored, first.stored)
        clock.advance(minutes: 50)
        let refreshedA = try await a.currentToken()
        let refreshedB = try await b.currentToken()
        XCTAssertEqual(refreshedA.jwt, refreshedB.jwt)
        XCTAssertEqual(signer.signed, 2, "one token per period for both nodes")
    }

    func testCompareAndSwapLostToAnotherNodeAdoptsItsTokenAndDropsOurs() async throws {
        let store = MemoryTokenStore()
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let signer = FakeSigner()
        let a = manager(store, signer, clock)
        let b = manager(store, signer, clock)
        // Both read an empty store; A's swap lands between B's read and B's swap.
        let won = Locked<ProviderTokenState.Token?>(nil)
        store.beforeNextSwap {
            let token = try? await a.currentToken()
            won.withLock { $0 = token }
        }
        let adopted = try await b.currentToken()
        XCTAssertEqual(adopted.jwt, won.withLock { $0?.jwt })
        XCTAssertEqual(store.token(teamID: teamID, keyID: keyID)?.jwt, adopted.jwt)
        XCTAssertEqual(b.mintCount, 0)
        XCTAssertEqual(b.adoptCount, 1)
        XCTAssertEqual(signer.signed, 2, "B signed too, but its token never leaves the process")
    }

    func testTooManyUpdatesAdoptsTheTokenAnotherNodeStoredAndNeverSignsWithinTheFloor() async throws {
        let store = MemoryTokenStore()
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let signer = FakeSigner()
        store.failWrites = true  // our token never reached the store; another node's did, later
        let node = manager(store, signer, clock)
        let mine = try await node.currentToken()
        let theirs = StoredProviderToken(jwt: "theirs", issuedAt: mine.issuedAt - 60)
        store.put(theirs, teamID: teamID, keyID: keyID)
        guard case .retryNow(let adopted) = try await node.tokenAfterUpdateRejected(generation: mine.generation) else {
            return XCTFail("the stored token is adopted at once")
        }
        XCTAssertEqual(adopted.stored, theirs)
        let current = try await node.currentToken()
        XCTAssertEqual(current, adopted)
        XCTAssertEqual(signer.signed, 1)
    }

    func testTooManyUpdatesWithNothingStoredWaitsOutTheFloorThenSignsOnce() async throws {
        let store = MemoryTokenStore()
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let signer = FakeSigner()
        let node = manager(store, signer, clock)
        let mine = try await node.currentToken()
        let first = try await node.tokenAfterUpdateRejected(generation: mine.generation)
        XCTAssertEqual(first, .retryLater)
        clock.advance(minutes: 10)
        let second = try await node.tokenAfterUpdateRejected(generation: mine.generation)
        XCTAssertEqual(second, .retryLater)
        XCTAssertEqual(signer.signed, 1, "never signs within the floor")
        clock.advance(minutes: 10)
        guard case .retryNow(let next) = try await node.tokenAfterUpdateRejected(generation: mine.generation) else {
            return XCTFail("a new token is due after 20 minutes")
        }
        XCTAssertEqual(next.generation, mine.generation + 1)
        // Every other request rejected with the old token retries with the new one: no second signature.
        let other = try await node.tokenAfterUpdateRejected(generation: mine.generation)
        XCTAssertEqual(other, .retryNow(next))
        XCTAssertEqual(signer.signed, 2)
        XCTAssertEqual(store.token(teamID: teamID, keyID: keyID), next.stored)
    }

    func testStoreFailuresFallBackToTheProcessesOwnToken() async throws {
        let store = MemoryTokenStore()
        store.failWrites = true
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let signer = FakeSigner()
        let node = manager(store, signer, clock)
        let token = try await node.currentToken()
        let again = try await node.currentToken()
        XCTAssertEqual(again, token)
        XCTAssertEqual(node.mintCount, 1)
        XCTAssertNil(store.token(teamID: teamID, keyID: keyID))
    }
}
