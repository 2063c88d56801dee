import Clocks
import Synchronization
import XCTest

/// The one timer facility and the typed instants it waits for: no sockets, real (short) waits.
final class MonotonicTimerTests: XCTestCase {
    func testInstantArithmeticIsInDurationsAndSaturates() {
        let start = MonotonicInstant(nanoseconds: 1_000)
        XCTAssertEqual((start + .microseconds(2)).nanoseconds, 3_000)
        XCTAssertEqual(start + .seconds(-5), start, "a negative duration counts as zero")
        XCTAssertEqual((MonotonicInstant(nanoseconds: .max - 1) + .seconds(1)).nanoseconds, .max)
        XCTAssertEqual(start.duration(to: start + .milliseconds(7)), .milliseconds(7))
        XCTAssertEqual((start + .milliseconds(7)).duration(to: start), .zero, "an earlier instant is no time away")
        XCTAssertLessThan(start, start + .nanoseconds(1))
    }

    func testAPastInstantHasPassedAndNothingRemains() {
        let past = MonotonicInstant(nanoseconds: MonotonicClock.now() - 1_000_000)
        XCTAssertTrue(past.hasPassed)
        XCTAssertEqual(past.remaining, .zero)
        let future = MonotonicInstant.now + .seconds(3600)
        XCTAssertFalse(future.hasPassed)
        XCTAssertGreaterThan(future.remaining, .seconds(3500))
    }

    func testSleepUntilAnInstantReturnsNoEarlierThanIt() async throws {
        let deadline = MonotonicInstant.now + .milliseconds(30)
        try await MonotonicTimer.sleep(until: deadline)
        XCTAssertTrue(deadline.hasPassed, "measured on the same clock the deadline was read from")
    }

    /// A cancelled sleep throws at once instead of sitting out its hour: what lets a cancelled wait end.
    func testCancellingASleepEndsItAtOnceWithCancellationError() async {
        let started = MonotonicClock.now()
        let sleeper = Task { () -> Bool in
            do {
                try await MonotonicTimer.sleep(until: .now + .seconds(3600))
                return false
            } catch {
                return error is CancellationError
            }
        }
        sleeper.cancel()
        let cancelled = await sleeper.value
        XCTAssertTrue(cancelled)
        XCTAssertLessThan(MonotonicClock.elapsed(since: started), .seconds(60))
    }

    func testASleepInAnAlreadyCancelledTaskThrowsWithoutWaiting() async {
        let sleeper = Task { () -> Bool in
            withUnsafeCurrentTask { $0?.cancel() }
            return (try? await MonotonicTimer.sleep(for: .zero)) == nil
        }
        let threw = await sleeper.value
        XCTAssertTrue(threw, "even a zero sleep notices the cancellation")
    }

    func testAScheduledCallbackRunsOnceAfterItsDelay() {
        let fired = expectation(description: "fired")
        let scheduled = MonotonicInstant.now
        let firedAt = FiredAt()
        MonotonicTimer.schedule(after: .milliseconds(30)) {
            firedAt.nanoseconds.store(MonotonicClock.now(), ordering: .sequentiallyConsistent)
            fired.fulfill()
        }
        wait(for: [fired], timeout: 30)
        let at = MonotonicInstant(nanoseconds: firedAt.nanoseconds.load(ordering: .sequentiallyConsistent))
        XCTAssertGreaterThanOrEqual(scheduled.duration(to: at), .milliseconds(30))
    }

    func testANegativeDelayRunsTheCallbackSoon() {
        let fired = expectation(description: "fired")
        MonotonicTimer.schedule(after: .seconds(-10)) { fired.fulfill() }
        wait(for: [fired], timeout: 30)
    }
}

/// When the scheduled callback ran, written on the timer's thread and read by the test.
private final class FiredAt: Sendable {
    let nanoseconds = Atomic<UInt64>(0)
}
