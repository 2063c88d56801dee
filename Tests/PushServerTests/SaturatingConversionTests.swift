import Foundation
import Logging
import XCTest

/// `FixedWidthInteger(saturating:)` (Sources/Logging): the one conversion of untrusted doubles to integers.
final class SaturatingConversionTests: XCTestCase {
    func testValuesInRangeAreTruncatedTowardZero() {
        XCTAssertEqual(Int64(saturating: 1_700_000_000.9), 1_700_000_000)
        XCTAssertEqual(Int64(saturating: -2.9), -2)
        XCTAssertEqual(Int64(saturating: -0.0), 0)
        XCTAssertEqual(Int(saturating: 9_999_999_999_999_999.0), 10_000_000_000_000_000)
    }

    func testValuesPastTheRangeSaturateInsteadOfTrapping() {
        XCTAssertEqual(Int64(saturating: 1e19), .max)  // 9999999999999999 s in ms: the reported crash
        XCTAssertEqual(Int64(saturating: 9_223_372_036_854_775_808.0), .max)  // 2^63, what Double(Int64.max) is
        XCTAssertEqual(Int64(saturating: 1e308), .max)
        XCTAssertEqual(Int64(saturating: -1e308), .min)
        XCTAssertEqual(Int64(saturating: -9_223_372_036_854_775_808.0), .min)  // exactly -2^63: in range
        XCTAssertEqual(Int64(saturating: Double.greatestFiniteMagnitude), .max)
        XCTAssertEqual(Int32(saturating: 3e9), .max)
        XCTAssertEqual(UInt8(saturating: 256.0), 255)
        XCTAssertEqual(UInt8(saturating: -1.0), 0)
        XCTAssertEqual(UInt64(saturating: -0.5), 0)
        XCTAssertEqual(Int64(saturating: Float(1e30)), .max)
    }

    func testInfinitiesSaturateAndNaNIsZero() {
        XCTAssertEqual(Int64(saturating: Double.infinity), .max)
        XCTAssertEqual(Int64(saturating: -Double.infinity), .min)
        XCTAssertEqual(Int64(saturating: Double.nan), 0)
        XCTAssertEqual(Int(saturating: Double.signalingNaN), 0)
    }

    func testLargestDoubleBelowTwoToThe63IsConvertedExactly() {
        let below = Double(Int64.max).nextDown  // 2^63 - 1024
        XCTAssertEqual(Int64(saturating: below), Int64(below))
    }

    func testLogTimestampClampsDatesOutsideFourDigitYears() {
        XCTAssertEqual(LogFormat.timestamp(Date(timeIntervalSince1970: 1e16)), "9999-12-31T23:59:59.999Z")
        XCTAssertEqual(LogFormat.timestamp(Date(timeIntervalSince1970: .infinity)), "9999-12-31T23:59:59.999Z")
        XCTAssertEqual(LogFormat.timestamp(Date(timeIntervalSince1970: -1e300)), "0000-01-01T00:00:00.000Z")
        XCTAssertEqual(LogFormat.timestamp(Date(timeIntervalSince1970: .nan)), "1970-01-01T00:00:00.000Z")
    }

    func testLogTimestampBeforeNineteenSeventyKeepsAPositiveFraction() {
        XCTAssertEqual(LogFormat.timestamp(Date(timeIntervalSince1970: -0.25)), "1969-12-31T23:59:59.750Z")
        XCTAssertEqual(LogFormat.timestamp(Date(timeIntervalSince1970: -86_400)), "1969-12-31T00:00:00.000Z")
    }
}
