import Foundation
import PushStore
import XCTest

/// The one time unit of every backend: hostile dates and durations saturate instead of trapping.
// 1e16 below is 9999999999999999 as a Double.
final class MillisecondsTests: XCTestCase {
    func testMillisecondsSaturateForDatesPastInt64() {
        XCTAssertEqual(Date(timeIntervalSince1970: 1e16).millisecondsSince1970, .max)
        XCTAssertEqual(Date(timeIntervalSince1970: -1e300).millisecondsSince1970, .min)
        XCTAssertEqual(Date(timeIntervalSince1970: .infinity).millisecondsSince1970, .max)
        XCTAssertEqual(Date(timeIntervalSince1970: .nan).millisecondsSince1970, 0)
        XCTAssertEqual(Date(timeIntervalSince1970: 1_700_000_000.1239).millisecondsSince1970, 1_700_000_000_123)
        XCTAssertEqual(Date(timeIntervalSince1970: -0.0015).millisecondsSince1970, -2)
    }

    func testDurationMillisecondsSaturateAndKeepTheSign() {
        XCTAssertEqual(Duration.seconds(Int64.max).milliseconds, .max)
        XCTAssertEqual(Duration.seconds(Int64.min).milliseconds, .min)
        XCTAssertEqual(Duration.milliseconds(-1500).milliseconds, -1500)
        XCTAssertEqual(Duration.milliseconds(2500).milliseconds, 2500)
    }
}
