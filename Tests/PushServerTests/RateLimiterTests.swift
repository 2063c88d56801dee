import Foundation
import Locking
import XCTest

@testable import PushServer

/// The limiters' pure logic, with time passed in: nothing sleeps.
final class RateLimiterTests: XCTestCase {
    // MARK: Several nodes

    func testPerInstanceLimitIsSharedOutAmongTheLiveNodes() {
        var limits = ServerConfig.Limits()
        limits.requestsPerSecondPerInstance = 10
        let nodes = Locked(1)
        let clock = Locked(100.0)
        let limiters = Limiters(limits, liveNodes: nodes, clock: { clock.withLock { $0 } })
        func allowed(_ key: String) -> Int {
            (0..<20).filter { _ in
                limiters.secretAPI.take(key, cost: limiters.instanceCost(limiters.secretAPI)) == .allowed
            }.count
        }
        XCTAssertEqual(allowed("alone"), 10, "one node: the whole rate")
        nodes.withLock { $0 = 2 }
        XCTAssertEqual(allowed("two"), 5, "two nodes: half each, about the rate together")
        nodes.withLock { $0 = 50 }
        XCTAssertEqual(limiters.instanceCost(limiters.secretAPI), 10, "never more than the burst")
        XCTAssertEqual(allowed("many"), 1, "a request still passes when its bucket is full")
        nodes.withLock { $0 = 0 }
        XCTAssertEqual(limiters.instanceCost(limiters.secretAPI), 1)
    }

    // MARK: Token buckets

    func testBucketAllowsBurstThenRefillsWithTime() {
        var buckets = TokenBuckets(rate: 3, burst: 3, capacity: 10)
        XCTAssertEqual(
            (0..<4).map { _ in buckets.take("i", now: 100) },
            [.allowed, .allowed, .allowed, .limited(retryAfter: 1)])
        XCTAssertEqual(buckets.take("other", now: 100), .allowed, "buckets are per key")
        XCTAssertEqual(buckets.take("i", now: 100.2), .limited(retryAfter: 1))
        XCTAssertEqual(buckets.take("i", now: 100.34), .allowed, "one token refills after 1/3 s")
    }

    func testBurstLargerThanRateAbsorbsALaunchThenHoldsTheSustainedRate() {
        var buckets = TokenBuckets(rate: 2, burst: 10, capacity: 10)
        XCTAssertEqual((0..<10).filter { _ in buckets.take("ip", now: 0) == .allowed }.count, 10)
        XCTAssertEqual(buckets.take("ip", now: 0), .limited(retryAfter: 1))
        // Ten seconds later: 20 tokens earned, but the bucket holds 10.
        XCTAssertEqual((0..<12).filter { _ in buckets.take("ip", now: 10) == .allowed }.count, 10)
    }

    func testRetryAfterIsTheTimeUntilEnoughTokensRoundedUp() {
        var buckets = TokenBuckets(rate: 0.25, burst: 1, capacity: 10)
        XCTAssertEqual(buckets.take("k", now: 0), .allowed)
        XCTAssertEqual(buckets.take("k", now: 0), .limited(retryAfter: 4))
        XCTAssertEqual(buckets.take("k", now: 2.5), .limited(retryAfter: 2), "1.5 s left, rounded up")
        XCTAssertEqual(buckets.take("k", now: 4), .allowed)
    }

    func testCostChargesSeveralTokensAndACostAboveTheBurstChargesTheWholeBucket() {
        var buckets = TokenBuckets(rate: 10, burst: 100, capacity: 10)
        XCTAssertEqual(buckets.take("k", cost: 60, now: 0), .allowed)
        XCTAssertEqual(buckets.take("k", cost: 60, now: 0), .limited(retryAfter: 2), "20 tokens short at 10/s")
        XCTAssertEqual(buckets.take("k", cost: 40, now: 0), .allowed)
        XCTAssertEqual(buckets.take("big", cost: 1e9, now: 0), .allowed, "a full bucket pays for any single request")
        XCTAssertEqual(buckets.take("big", cost: 1, now: 0), .limited(retryAfter: 1))
    }

    func testClockGoingBackwardsNeverAddsTokens() {
        var buckets = TokenBuckets(rate: 1, burst: 1, capacity: 10)
        XCTAssertEqual(buckets.take("k", now: 50), .allowed)
        XCTAssertEqual(buckets.take("k", now: 10), .limited(retryAfter: 1))
    }

    // MARK: The bounded table

    func testRefilledBucketsAreEvictedSoTheTableStaysSmall() {
        var buckets = TokenBuckets(rate: 10, burst: 10, capacity: 1000)
        for n in 0..<500 { _ = buckets.take("client-\(n)", now: 0) }
        XCTAssertEqual(buckets.table.entries.count, 500)
        // 61 s later (past the sweep interval) every bucket has refilled: one request sweeps them all out.
        _ = buckets.take("late", now: 61)
        XCTAssertEqual(Array(buckets.table.entries.keys), ["late"])
    }

    func testFullTableLetsNewKeysThroughUntrackedAndKeepsLimitingKnownOnes() {
        var buckets = TokenBuckets(rate: 1, burst: 1, capacity: 3)
        for key in ["a", "b", "c"] { XCTAssertEqual(buckets.take(key, now: 0), .allowed) }
        XCTAssertEqual(buckets.take("d", now: 0), .untracked, "no idle bucket to evict")
        XCTAssertEqual(buckets.take("d", now: 0), .untracked)
        XCTAssertEqual(buckets.table.entries.count, 3)
        XCTAssertEqual(buckets.table.overflows, 2)
        XCTAssertEqual(buckets.take("a", now: 0), .limited(retryAfter: 1), "tracked keys stay limited")
        // Once a bucket has refilled it is evicted on the next full-table insert, and the newcomer is tracked.
        XCTAssertEqual(buckets.take("d", now: 1.5), .allowed)
        XCTAssertEqual(buckets.take("d", now: 1.5), .limited(retryAfter: 1))
        XCTAssertLessThanOrEqual(buckets.table.entries.count, 3)
    }

    func testFullTableIsNotSweptOnEveryRequestOfAFlood() {
        var table = ClientTable<Int>(capacity: 2, sweepInterval: 60)
        var sweeps = 0
        let idle = { (_: Int) -> Bool in
            sweeps += 1; return false
        }
        _ = table.update("a", now: 0, isIdle: idle, create: { 0 }) { _ in }
        _ = table.update("b", now: 0, isIdle: idle, create: { 0 }) { _ in }
        let before = sweeps
        for n in 0..<1000 { XCTAssertNil(table.update("x\(n)", now: 0.5, isIdle: idle, create: { 0 }) { _ in }) }
        XCTAssertEqual(sweeps, before, "within a second of the last sweep a full table refuses without scanning")
        XCTAssertNil(table.update("y", now: 1.5, isIdle: idle, create: { 0 }) { _ in })
        XCTAssertEqual(sweeps, before + 2, "one sweep (two live entries examined) a second later")
    }

    // MARK: Failure windows

    func testFailuresWithinTheWindowLockTheKeyOutForTheLockout() {
        var windows = FailureWindows(maxFailures: 3, window: 60, lockout: 300, capacity: 100)
        XCTAssertEqual(windows.check("ip", now: 0), .allowed)
        XCTAssertEqual(windows.recordFailure("ip", now: 0), .allowed)
        XCTAssertEqual(windows.recordFailure("ip", now: 10), .allowed)
        XCTAssertEqual(windows.check("ip", now: 10), .allowed)
        XCTAssertEqual(windows.recordFailure("ip", now: 20), .limited(retryAfter: 300))
        XCTAssertEqual(windows.check("ip", now: 20), .limited(retryAfter: 300))
        XCTAssertEqual(windows.check("ip", now: 319.5), .limited(retryAfter: 1))
        XCTAssertEqual(windows.check("other", now: 20), .allowed, "other addresses are not affected")
        XCTAssertEqual(windows.check("ip", now: 320), .allowed, "the lockout ends")
        // After the lockout the address starts with a fresh window of three tries.
        XCTAssertEqual(windows.recordFailure("ip", now: 321), .allowed)
        XCTAssertEqual(windows.recordFailure("ip", now: 322), .allowed)
        XCTAssertEqual(windows.recordFailure("ip", now: 323), .limited(retryAfter: 300))
    }

    func testFailuresSpreadOverSeveralWindowsNeverLock() {
        var windows = FailureWindows(maxFailures: 3, window: 60, lockout: 300, capacity: 100)
        for minute in 0..<10 {
            XCTAssertEqual(windows.recordFailure("ip", now: Double(minute) * 61), .allowed)
            XCTAssertEqual(windows.recordFailure("ip", now: Double(minute) * 61 + 1), .allowed)
        }
        XCTAssertEqual(windows.check("ip", now: 700), .allowed)
    }

    func testCheckingUnknownKeysStoresNothing() {
        var windows = FailureWindows(maxFailures: 3, window: 60, lockout: 300, capacity: 100)
        for n in 0..<50 { XCTAssertEqual(windows.check("ip\(n)", now: 0), .allowed) }
        XCTAssertTrue(windows.table.entries.isEmpty)
    }

    func testExpiredWindowsAndEndedLockoutsAreEvicted() {
        var windows = FailureWindows(maxFailures: 1, window: 60, lockout: 100, capacity: 100)
        XCTAssertEqual(windows.recordFailure("locked", now: 0), .limited(retryAfter: 100))
        XCTAssertEqual(windows.recordFailure("counted", now: 30), .limited(retryAfter: 100))
        _ = windows.recordFailure("late", now: 61)
        XCTAssertEqual(Set(windows.table.entries.keys), ["locked", "counted", "late"], "still locked: kept")
        _ = windows.recordFailure("later", now: 300)
        XCTAssertEqual(Set(windows.table.entries.keys), ["later"])
    }

    // MARK: The thread-safe wrappers use the injected clock

    func testRateLimiterReadsTheInjectedClock() {
        let time = Locked(0.0)
        let limiter = RateLimiter(perSecond: 1, burst: 2, maxKeys: 10, clock: { time.withLock { $0 } })
        XCTAssertEqual(limiter.take("k"), .allowed)
        XCTAssertEqual(limiter.take("k"), .allowed)
        XCTAssertEqual(limiter.take("k"), .limited(retryAfter: 1))
        time.withLock { $0 = 1 }
        XCTAssertEqual(limiter.take("k"), .allowed)
        XCTAssertEqual(limiter.trackedKeys, 1)
    }

    func testFailureThrottleReadsTheInjectedClock() {
        let time = Locked(0.0)
        let throttle = FailureThrottle(
            maxFailures: 2, windowSeconds: 60, lockoutSeconds: 30, maxKeys: 10,
            clock: { time.withLock { $0 } })
        throttle.recordFailure("ip")
        XCTAssertEqual(throttle.recordFailure("ip"), .limited(retryAfter: 30))
        time.withLock { $0 = 29 }
        XCTAssertEqual(throttle.check("ip"), .limited(retryAfter: 1))
        time.withLock { $0 = 30 }
        XCTAssertEqual(throttle.check("ip"), .allowed)
    }

    func testMonotonicClockNeverGoesBack() {
        let first = monotonicSeconds()
        let second = monotonicSeconds()
        XCTAssertGreaterThanOrEqual(second, first)
    }
}
