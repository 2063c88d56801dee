import Clocks
import XCTest

final class MonotonicClockTests: XCTestCase {
    func testReadingsNeverGoBack() {
        var previous = MonotonicClock.now()
        for _ in 0..<10_000 {
            let current = MonotonicClock.now()
            XCTAssertGreaterThanOrEqual(current, previous)
            previous = current
        }
    }

    func testSecondsAgreeWithNanoseconds() {
        let nanos = MonotonicClock.now()
        let seconds = MonotonicClock.seconds()
        XCTAssertGreaterThanOrEqual(seconds, Double(nanos) / 1e9)
        XCTAssertLessThan(seconds - Double(nanos) / 1e9, 1, "two readings a moment apart")
    }

    func testElapsedSinceAFutureReadingIsZero() {
        XCTAssertEqual(MonotonicClock.elapsed(since: MonotonicClock.now() + 60_000_000_000), .zero)
    }

    func testElapsedSinceAPastReadingCoversTheGap() {
        let oneSecondAgo = MonotonicClock.now() - 1_000_000_000
        let elapsed = MonotonicClock.elapsed(since: oneSecondAgo)
        XCTAssertGreaterThanOrEqual(elapsed, .seconds(1))
        XCTAssertLessThan(elapsed, .seconds(60))
    }

    func testDurationNanosecondsSaturates() {
        XCTAssertEqual(Duration.milliseconds(1500).nanoseconds, 1_500_000_000)
        XCTAssertEqual(Duration.seconds(-1).nanoseconds, 0)
        XCTAssertEqual(Duration.milliseconds(-500).nanoseconds, 0, "a negative fraction only")
        XCTAssertEqual(Duration.seconds(Int64.max).nanoseconds, .max)
        XCTAssertEqual(Duration.zero.nanoseconds, 0)
    }
}
