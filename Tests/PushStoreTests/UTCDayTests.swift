import Foundation
import PushStore
import XCTest

/// The daily quota's day: UTC days by number, their boundaries and the `Retry-After` until the next one.
final class UTCDayTests: XCTestCase {
    private func date(_ text: String) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)!
    }

    func testMidnightStartsANewDayAndTheLastMillisecondBelongsToTheOldOne() {
        let before = UTCDay(containing: date("2026-12-06T23:59:59.999Z"))
        let midnight = UTCDay(containing: date("2026-12-07T00:00:00Z"))
        XCTAssertEqual(midnight.number, before.number + 1)
        XCTAssertEqual(before.next, midnight)
        XCTAssertEqual(midnight.start, date("2026-12-07T00:00:00Z"))
        XCTAssertEqual(midnight.description, "2026-12-07")
        XCTAssertEqual(UTCDay(containing: Date(timeIntervalSince1970: 0)).number, 0)
    }

    func testDaysBefore1970RoundDownNotTowardsZero() {
        XCTAssertEqual(UTCDay(containing: Date(timeIntervalSince1970: -1)).number, -1)
        XCTAssertEqual(UTCDay(containing: Date(timeIntervalSince1970: -86_400)).number, -1)
        XCTAssertEqual(UTCDay(containing: Date(timeIntervalSince1970: -86_401)).number, -2)
    }

    func testTheDayIsUTCWhateverTheLocalOffsetOfTheMoment() {
        // 23:30 in New York on 6 December is 04:30 UTC on the 7th.
        XCTAssertEqual(UTCDay(containing: date("2026-12-06T23:30:00-05:00")).description, "2026-12-07")
    }

    func testRetryAfterRunsToTheNextMidnightRoundedUpAndIsNeverZero() {
        XCTAssertEqual(UTCDay.secondsUntilNextDay(after: date("2026-12-06T23:00:00Z")), 3600)
        XCTAssertEqual(UTCDay.secondsUntilNextDay(after: date("2026-12-06T23:59:59.250Z")), 1, "0.75 s rounds up")
        XCTAssertEqual(UTCDay.secondsUntilNextDay(after: date("2026-12-06T23:59:58.500Z")), 2)
        XCTAssertEqual(
            UTCDay.secondsUntilNextDay(after: date("2026-12-07T00:00:00Z")), 86_400,
            "at midnight the new day has just begun")
        XCTAssertEqual(UTCDay.secondsUntilNextDay(after: date("2026-12-06T12:00:00Z")), 43_200)
    }
}
