import BeamsModel
import Foundation
import PushStore
import XCTest

/// `deliverAtLocalTime`: parsing and the next occurrence per zone (DST included); the engine's rounds built on it
/// are in PushServerTests' LocalTimeRoundTests.
final class LocalTimeTests: XCTestCase {
    private func utc(_ text: String) -> Int64 {
        Int64(RFC3339.parse(text)!.timeIntervalSince1970)
    }

    private func zone(_ name: String) -> TimeZone { TimeZone(identifier: name)! }

    func testParsesHoursMinutesAndOptionalSecondsOnly() {
        XCTAssertEqual(LocalTime("09:00")?.description, "09:00:00")
        XCTAssertEqual(LocalTime("23:59:59")?.description, "23:59:59")
        XCTAssertEqual(LocalTime("00:00")?.description, "00:00:00")
        for bad in [
            "9:00", "24:00", "12:60", "12:00:60", "12:00:00:00", "", ":", "12-00", "１２:00", "+1:00", "12:0a",
            "09:00 ", String(repeating: "1", count: 10_000),
        ] {
            XCTAssertNil(LocalTime(bad), bad)
        }
    }

    func testNextOccurrenceIsPerZoneAndCountsTheStartItself() throws {
        let nine = try XCTUnwrap(LocalTime("09:00"))
        let start = utc("2026-06-01T07:30:00Z")
        XCTAssertEqual(nine.nextOccurrence(onOrAfter: start, in: zone("UTC")), utc("2026-06-01T09:00:00Z"))
        XCTAssertEqual(nine.nextOccurrence(onOrAfter: start, in: zone("Europe/Paris")), utc("2026-06-02T07:00:00Z"))
        XCTAssertEqual(nine.nextOccurrence(onOrAfter: start, in: zone("Asia/Kathmandu")), utc("2026-06-02T03:15:00Z"))
        XCTAssertEqual(nine.nextOccurrence(onOrAfter: start, in: zone("America/New_York")), utc("2026-06-01T13:00:00Z"))
        XCTAssertEqual(
            nine.nextOccurrence(onOrAfter: utc("2026-06-01T09:00:00Z"), in: zone("UTC")),
            utc("2026-06-01T09:00:00Z"), "the start moment itself is an occurrence")
    }

    func testATimeADSTJumpSkipsFallsOnTheNextExistingMoment() throws {
        let twoThirty = try XCTUnwrap(LocalTime("02:30"))
        // 2026-03-29: Paris jumps from 02:00 CET to 03:00 CEST.
        let due = twoThirty.nextOccurrence(onOrAfter: utc("2026-03-28T23:00:00Z"), in: zone("Europe/Paris"))
        XCTAssertEqual(due, utc("2026-03-29T01:00:00Z"))
    }
}
