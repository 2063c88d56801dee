import PublishEngine
import XCTest

/// The pacing of throttled publishes, on a simulated clock: no sleeps.
final class DeliveryPacerTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    /// Runs a sender that sends whenever the pacer lets it and otherwise waits exactly as long as it is told.
    /// - Returns: deliveries per whole second of simulated time.
    private func simulate(perMinute: Int, seconds: Int, start: UInt64 = 5_000_000_000) -> [Int] {
        var pacer = DeliveryPacer(perMinute: perMinute, now: start)
        var now = start
        let end = start + UInt64(seconds) * second
        var perSecond = [Int](repeating: 0, count: seconds)
        while now < end {
            let wait = pacer.take(now: now)
            if wait == 0 {
                perSecond[Int((now - start) / second)] += 1
            } else {
                now += wait
            }
        }
        return perSecond
    }

    func testSixtyThousandPerMinuteIsAThousandEverySecondWithinTheBurst() {
        let counts = simulate(perMinute: 60_000, seconds: 20)
        XCTAssertEqual(counts.reduce(0, +), 20_000, accuracy: 10, "within one quantum at the end of the window")
        for (index, count) in counts.enumerated() {
            XCTAssertEqual(count, 1000, accuracy: 50, "second \(index)")
        }
    }

    func testAnEmptyBucketWakesOncePerQuantumNotPerDelivery() {
        var pacer = DeliveryPacer(perMinute: 60_000, now: 0)
        var now: UInt64 = 0
        var wakeUps = 0
        var sent = 0
        while now < 10 * second {
            let wait = pacer.take(now: now)
            if wait == 0 { sent += 1 } else { now += wait; wakeUps += 1 }
        }
        XCTAssertEqual(sent, 10_000, accuracy: 10)
        XCTAssertLessThanOrEqual(wakeUps, 1001, "about 100 wake-ups a second at 1,000 deliveries a second")
    }

    func testSlowRatesSpreadOneDeliveryEveryInterval() {
        let counts = simulate(perMinute: 60, seconds: 10)
        XCTAssertEqual(counts, [Int](repeating: 1, count: 10))
        XCTAssertEqual(simulate(perMinute: 30, seconds: 10).reduce(0, +), 5)
    }

    func testAPauseEarnsAtMostTheBurstNotTheWholeGap() {
        var pacer = DeliveryPacer(perMinute: 60_000, now: 0)
        XCTAssertEqual(pacer.burst, 50)
        // An hour without sending (a full sender window, a store outage): at most 50 go at once afterwards.
        let later: UInt64 = 3600 * second
        var immediate = 0
        while pacer.take(now: later) == 0 { immediate += 1 }
        XCTAssertEqual(immediate, 50)
        XCTAssertEqual(pacer.take(now: later), 10_000_000, "an empty bucket waits for a quantum: 10 tokens, 10 ms")
    }

    func testANewPacerStartsWithOneTokenSoARestartDoesNotBurst() {
        var pacer = DeliveryPacer(perMinute: 600_000, now: 42)
        XCTAssertEqual(pacer.take(now: 42), 0)
        XCTAssertGreaterThan(pacer.take(now: 42), 0)
    }

    func testExtremeRatesAndClockValuesDoNotTrap() {
        var fast = DeliveryPacer(perMinute: .max, now: 0)
        XCTAssertEqual(fast.interval, 1)
        XCTAssertEqual(fast.take(now: .max), 0)
        XCTAssertEqual(fast.take(now: .max), 0, "the credit saturates instead of overflowing")
        var slow = DeliveryPacer(perMinute: -5, now: .max - 1)
        XCTAssertEqual(slow.interval, 60 * second)
        XCTAssertEqual(slow.take(now: .max - 1), 0)
        XCTAssertEqual(slow.take(now: .max), 60 * second - 1, "one token is the quantum at 1 per minute")
        // A clock reading from before the last one (never from the monotonic clock, but from a test) waits.
        XCTAssertGreaterThan(slow.take(now: 0), 0)
    }
}
