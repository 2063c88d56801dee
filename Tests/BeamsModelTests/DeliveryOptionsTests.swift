import BeamsModel
import Foundation
import JSON
import XCTest

/// `x_delivery` intake: what it accepts, and a clear 422 naming the member for everything else.
final class DeliveryOptionsTests: XCTestCase {
    private let now = RFC3339.parse("2026-12-01T12:00:00Z")!
    private var limits = DeliveryOptions.Limits()

    private func resolve(_ json: String?, header: String? = nil) throws -> DeliveryOptions? {
        let member = json.map { JSONValue.parse(Array($0.utf8))! }
        return try DeliveryOptions.resolve(member: member, header: header, now: now, limits: limits)
    }

    private func assertRefused(
        _ json: String?, header: String? = nil, path: String, _ fragment: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try resolve(json, header: header), file: file, line: line) { error in
            guard let beams = error as? BeamsError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(beams.statusCode, 422, file: file, line: line)
            XCTAssertTrue(beams.detail.contains(path), beams.detail, file: file, line: line)
            XCTAssertTrue(beams.detail.contains(fragment), beams.detail, file: file, line: line)
        }
    }

    func testAcceptsEveryMemberAsTheDocsShowThem() throws {
        let options = try XCTUnwrap(
            resolve(
                #"""
                {"sendAt":"2026-12-02T09:00:00+01:00","deliverAtLocalTime":"09:00","expiresAt":1796212800,
                 "throttlePerMinute":60000}
                """#))
        XCTAssertEqual(options.sendAt, RFC3339.parse("2026-12-02T08:00:00Z"))
        XCTAssertEqual(options.localTime, LocalTime("09:00"))
        XCTAssertEqual(options.localTimeFrom, options.sendAt)
        XCTAssertEqual(options.defaultTimeZone, "UTC")
        XCTAssertEqual(options.expiresAt, Date(timeIntervalSince1970: 1_796_212_800))
        XCTAssertEqual(options.throttlePerMinute, 60_000)
    }

    func testAbsentObjectIsAnOrdinaryPublishUnlessTheInstanceThrottlesByDefault() throws {
        XCTAssertNil(try resolve(nil))
        XCTAssertNil(try resolve("null"))
        limits.defaultThrottlePerMinute = 1200
        XCTAssertEqual(try resolve(nil)?.throttlePerMinute, 1200)
        XCTAssertEqual(try resolve(#"{"throttlePerMinute":60}"#)?.throttlePerMinute, 60)
    }

    func testAPastSendAtMeansNowAndTheHeaderCarriesTheSameObject() throws {
        let past = try XCTUnwrap(resolve(#"{"sendAt":"2026-12-01T11:00:00Z"}"#))
        XCTAssertNil(past.sendAt)
        let header = try XCTUnwrap(resolve(nil, header: #"{"sendAt":"2026-12-01T13:00:00Z"}"#))
        XCTAssertEqual(header.sendAt, RFC3339.parse("2026-12-01T13:00:00Z"))
    }

    func testRefusesWrongTypesWithTheMemberNamed() {
        assertRefused(#"[1]"#, path: "`x_delivery`", "Expected: object, given: array")
        assertRefused(#"{"sendAt":true}"#, path: "`x_delivery.sendAt`", "given: boolean")
        assertRefused(#"{"sendAt":{"at":1}}"#, path: "`x_delivery.sendAt`", "given: object")
        assertRefused(#"{"deliverAtLocalTime":900}"#, path: "`x_delivery.deliverAtLocalTime`", "given: integer")
        assertRefused(#"{"expiresAt":[]}"#, path: "`x_delivery.expiresAt`", "given: array")
        assertRefused(#"{"throttlePerMinute":"60"}"#, path: "`x_delivery.throttlePerMinute`", "given: string")
        assertRefused(#"{"throttlePerMinute":60.5}"#, path: "`x_delivery.throttlePerMinute`", "whole number")
        assertRefused(#"{"sendat":"2026-12-02T09:00:00Z"}"#, path: "`x_delivery.sendat`", "not allowed")
    }

    func testRefusesHugeNumbersBadDatesAndFarFutureLimits() {
        assertRefused(#"{"throttlePerMinute":0}"#, path: "throttlePerMinute", "between 1 and 6000000")
        assertRefused(#"{"throttlePerMinute":-1}"#, path: "throttlePerMinute", "between 1 and 6000000")
        assertRefused(#"{"throttlePerMinute":1e30}"#, path: "throttlePerMinute", "between 1 and 6000000")
        assertRefused(#"{"throttlePerMinute":9223372036854775807}"#, path: "throttlePerMinute", "between 1 and")
        assertRefused(#"{"sendAt":99999999999999}"#, path: "sendAt", "out of range")
        assertRefused(#"{"sendAt":-1}"#, path: "sendAt", "out of range")
        assertRefused(#"{"sendAt":1e300}"#, path: "sendAt", "RFC 3339")
        assertRefused(#"{"sendAt":"2026-12-02T09:00:00"}"#, path: "sendAt", "with an offset")
        assertRefused(#"{"sendAt":"2026-02-30T09:00:00Z"}"#, path: "sendAt", "RFC 3339")
        assertRefused(#"{"sendAt":"2027-06-01T09:00:00Z"}"#, path: "sendAt", "within 30 days")
        assertRefused(#"{"sendAt":"2026-11-29T09:00:00Z"}"#, path: "sendAt", "24 hours in the past")
        assertRefused(#"{"expiresAt":"2026-12-01T11:59:59Z"}"#, path: "expiresAt", "in the past")
        assertRefused(
            #"{"sendAt":"2026-12-02T09:00:00Z","expiresAt":"2026-12-02T09:00:00Z"}"#, path: "expiresAt",
            "after sendAt")
        assertRefused(#"{"expiresAt":"9999-12-31T23:59:59Z"}"#, path: "expiresAt", "within 30 days")
        assertRefused(#"{"deliverAtLocalTime":"25:00"}"#, path: "deliverAtLocalTime", "HH:MM")
    }

    func testTheInstanceMaximumBoundsTheThrottle() {
        limits.maxThrottlePerMinute = 1000
        assertRefused(#"{"throttlePerMinute":1001}"#, path: "throttlePerMinute", "between 1 and 1000")
        limits.maxScheduleDays = 1
        assertRefused(#"{"sendAt":"2026-12-02T12:00:01Z"}"#, path: "sendAt", "within 1 days")
    }

    func testTheHeaderIsBoundedAndNotCombinedWithTheBody() {
        assertRefused(
            #"{"throttlePerMinute":1}"#, header: #"{"throttlePerMinute":2}"#, path: "`x_delivery`", "not both")
        assertRefused(nil, header: "not json", path: "X-Push-Delivery", "JSON object")
        assertRefused(nil, header: String(repeating: " ", count: 2000) + "{}", path: "X-Push-Delivery", "1024 bytes")
        assertRefused(nil, header: #"{"throttlePerMinute":true}"#, path: "`x_delivery.throttlePerMinute`", "boolean")
    }
}
