import BeamsModel
import Foundation
import XCTest

final class RFC3339Tests: XCTestCase {
    func testParsesUTCOffsetsAndFractions() {
        XCTAssertEqual(RFC3339.parse("1970-01-01T00:00:00Z")?.timeIntervalSince1970, 0)
        XCTAssertEqual(
            RFC3339.parse("2026-12-01T10:00:00+01:00")?.timeIntervalSince1970,
            RFC3339.parse("2026-12-01T09:00:00Z")?.timeIntervalSince1970)
        XCTAssertEqual(
            RFC3339.parse("2026-12-01T04:15:00-04:45")?.timeIntervalSince1970,
            RFC3339.parse("2026-12-01T09:00:00z")?.timeIntervalSince1970)
        XCTAssertEqual(
            RFC3339.parse("2024-02-29T12:00:00.250Z")?.timeIntervalSince1970 ?? 0, 1_709_208_000.25,
            accuracy: 0.0001)
        // Checked against Foundation's own calendar arithmetic for a spread of dates.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for (year, month, day) in [(1999, 12, 31), (2000, 2, 29), (2038, 1, 19), (2100, 3, 1), (9999, 12, 31)] {
            let expected = calendar.date(
                from: DateComponents(year: year, month: month, day: day, hour: 7, minute: 8, second: 9))
            let text = String(format: "%04d-%02d-%02dT07:08:09Z", year, month, day)
            XCTAssertEqual(RFC3339.parse(text), expected, text)
        }
    }

    func testRefusesUnzonedImpossibleAndHostileTimes() {
        for bad in [
            "2026-12-01T09:00:00", "2026-12-01 09:00:00Z", "2026-13-01T09:00:00Z", "2026-02-29T09:00:00Z",
            "2026-04-31T09:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01T09:60:00Z", "2026-12-01T09:00:00+24:00",
            "2026-12-01T09:00:00.Z", "2026-12-01T09:00:00+0100", "2026-12-01T09:00:00Zjunk", "tomorrow", "",
            "２026-12-01T09:00:00Z", "-026-12-01T09:00:00Z",
            "2026-12-01T09:00:00." + String(repeating: "9", count: 100) + "Z",
            String(repeating: "2026-12-01T09:00:00Z", count: 1000),
        ] {
            XCTAssertNil(RFC3339.parse(bad), bad)
        }
    }
}
