import FCMClient
import XCTest

/// The token state machine driven by a hand-moved clock: no sleeps, no network.
final class AccessTokenStateTests: XCTestCase {
    private let policy = AccessTokenPolicy(
        refreshAhead: 225, expiryMargin: 30, initialBackoff: 1, maxBackoff: 300,
        configurationBackoff: 60)

    private func token(_ value: String, _ expiresIn: Int = 3599) -> AccessToken {
        AccessToken(value: value, expiresIn: expiresIn)
    }

    func testFirstCallerFetchesOthersWaitThenEveryoneUsesTheToken() {
        var state = AccessTokenState(policy: policy)
        XCTAssertEqual(state.acquire(now: 1000), .refresh)
        XCTAssertTrue(state.refreshing)
        XCTAssertEqual(state.acquire(now: 1000), .wait)
        XCTAssertEqual(state.acquire(now: 1001), .wait)
        let installed = state.refreshSucceeded(token("t1"), now: 1002)
        XCTAssertEqual(installed.expiresAt, 1002 + 3599)
        XCTAssertEqual(state.acquire(now: 1002), .use(installed))
        XCTAssertEqual(state.acquire(now: 2000), .use(installed))
        XCTAssertEqual(state.fetchCount, 1)
    }

    func testRefreshesAheadOfExpiryWithOneFetcherWhileOthersKeepUsingTheOldToken() {
        var state = AccessTokenState(policy: policy)
        _ = state.acquire(now: 0)
        let first = state.refreshSucceeded(token("t1", 3600), now: 0)
        XCTAssertEqual(state.acquire(now: 3374), .use(first), "before the refresh window")
        XCTAssertEqual(state.acquire(now: 3375), .useAndRefresh(first), "225 s before expiry")
        XCTAssertEqual(state.acquire(now: 3376), .use(first), "a fetch is in flight: no second fetcher")
        XCTAssertEqual(state.acquire(now: 3500), .use(first))
        let second = state.refreshSucceeded(token("t2", 3600), now: 3400)
        XCTAssertEqual(second.generation, first.generation + 1)
        XCTAssertEqual(state.acquire(now: 3401), .use(second))
    }

    func testTokenInsideTheExpiryMarginIsNotHandedOut() {
        var state = AccessTokenState(policy: policy)
        _ = state.acquire(now: 0)
        let first = state.refreshSucceeded(token("t1", 3600), now: 0)
        _ = state.acquire(now: 3375)  // refresh in flight, never reported
        XCTAssertEqual(state.acquire(now: 3569), .use(first))
        XCTAssertEqual(state.acquire(now: 3570), .wait, "30 s before expiry the old token is no longer usable")
        XCTAssertEqual(state.acquire(now: 9999), .wait)
    }

    func testExpiredTokenWithNoFetchInFlightStartsAFetch() {
        var state = AccessTokenState(policy: policy)
        _ = state.acquire(now: 0)
        state.refreshSucceeded(token("t1", 100), now: 0)
        XCTAssertEqual(state.acquire(now: 500), .refresh)
        XCTAssertEqual(state.acquire(now: 500), .wait)
    }

    func testTransientFailuresBackOffExponentiallyUpToTheCap() {
        var state = AccessTokenState(policy: policy)
        var now = 0.0
        var delays: [Double] = []
        for _ in 0..<12 {
            XCTAssertEqual(state.acquire(now: now), .refresh)
            state.refreshFailed(.unavailable(status: 503), now: now)
            let retryAt = state.nextAttempt ?? -1
            XCTAssertEqual(state.acquire(now: retryAt - 0.5), .unavailable(.unavailable(status: 503), retryAt: retryAt))
            delays.append(retryAt - now)
            now = retryAt
        }
        XCTAssertEqual(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300])
        XCTAssertNil(state.authProblem, "an unavailable endpoint is not a configuration problem")
        state.refreshSucceeded(token("t"), now: now)
        XCTAssertEqual(state.failures, 0)
        XCTAssertNil(state.nextAttempt)
    }

    func testRefusalBacksOffAtLeastAMinuteAndIsReportedUntilASuccess() {
        var state = AccessTokenState(policy: policy)
        let refusal = AccessTokenError.rejected(
            status: 400, error: "invalid_grant", description: "Invalid JWT Signature.")
        _ = state.acquire(now: 10)
        state.refreshFailed(refusal, now: 10)
        XCTAssertEqual(state.nextAttempt, 70)
        XCTAssertEqual(state.authProblem, .refused(refusal, since: 10))
        XCTAssertEqual(state.acquire(now: 69), .unavailable(refusal, retryAt: 70))
        XCTAssertEqual(state.acquire(now: 70), .refresh)
        state.refreshFailed(refusal, now: 70)
        XCTAssertEqual(state.authProblem, .refused(refusal, since: 10), "the problem's start is kept")
        _ = state.acquire(now: 200)
        state.refreshSucceeded(token("t"), now: 200)
        XCTAssertNil(state.authProblem)
    }

    func testFailedRefreshAheadKeepsServingTheValidTokenDuringBackoff() {
        var state = AccessTokenState(policy: policy)
        _ = state.acquire(now: 0)
        let first = state.refreshSucceeded(token("t1", 3600), now: 0)
        XCTAssertEqual(state.acquire(now: 3400), .useAndRefresh(first))
        state.refreshFailed(.transport("connection refused"), now: 3400)
        XCTAssertEqual(state.acquire(now: 3400.5), .use(first), "in backoff: keep the old token, no new fetch")
        XCTAssertEqual(state.acquire(now: 3401), .useAndRefresh(first), "backoff over: try again")
    }

    func testRejectedTokenIsDroppedAndFetchedAgainOnce() {
        var state = AccessTokenState(policy: policy)
        _ = state.acquire(now: 0)
        let first = state.refreshSucceeded(token("t1"), now: 0)
        XCTAssertEqual(state.rejected(generation: first.generation, now: 100), .refresh)
        XCTAssertNil(state.current)
        XCTAssertEqual(
            state.rejected(generation: first.generation, now: 100), .wait, "a second 401 for it joins the fetch")
        let second = state.refreshSucceeded(token("t2"), now: 101)
        XCTAssertEqual(
            state.rejected(generation: first.generation, now: 102), .use(second), "an old token's 401 keeps the new one"
        )
        XCTAssertNil(state.authProblem)
        XCTAssertEqual(state.rejected(generation: second.generation, now: 103), .refresh)
        XCTAssertEqual(state.authProblem, .rejectedByFCM(count: 2), "two fresh tokens rejected in a row")
        let third = state.refreshSucceeded(token("t3"), now: 104)
        state.accepted(generation: third.generation)
        XCTAssertNil(state.authProblem)
    }

    func testRejectionDuringBackoffFetchesAtOnce() {
        var state = AccessTokenState(policy: policy)
        _ = state.acquire(now: 0)
        let first = state.refreshSucceeded(token("t1", 3600), now: 0)
        _ = state.acquire(now: 3400)
        state.refreshFailed(.unavailable(status: 500), now: 3400)
        XCTAssertEqual(state.rejected(generation: first.generation, now: 3400.2), .refresh)
    }
}
