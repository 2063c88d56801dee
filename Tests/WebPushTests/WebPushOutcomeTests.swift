import HTTPClient
import WebPush
import XCTest

final class WebPushOutcomeTests: XCTestCase {
    let now = 784_111_777  // Sun, 06 Nov 1994 08:49:37 GMT

    func testClassificationTable() {
        let table: [(Int, String?, WebPushOutcome)] = [
            (201, nil, .accepted(status: 201)),
            (202, nil, .accepted(status: 202)),
            (200, nil, .accepted(status: 200)),
            (404, nil, .subscriptionGone(status: 404)),
            (410, nil, .subscriptionGone(status: 410)),
            (413, nil, .payloadTooLarge),
            (429, "30", .retry(status: 429, after: 30)),
            (429, nil, .retry(status: 429, after: nil)),
            (500, "5", .retry(status: 500, after: 5)),
            (502, "garbage", .retry(status: 502, after: nil)),
            (503, "Sun, 06 Nov 1994 08:50:37 GMT", .retry(status: 503, after: 60)),
            (400, nil, .configurationError(status: 400, detail: "")),
            (401, nil, .configurationError(status: 401, detail: "")),
            (403, nil, .configurationError(status: 403, detail: "")),
            (301, nil, .unknown(status: 301)),
            (405, nil, .unknown(status: 405)),
            (100, nil, .unknown(status: 100)),
            (0, nil, .unknown(status: 0)),
            (-1, nil, .unknown(status: -1)),
        ]
        for (status, retryAfter, expected) in table {
            XCTAssertEqual(WebPushOutcome(status: status, retryAfter: retryAfter, now: now), expected, "\(status)")
        }
    }

    func testOnlyGoneRemovesTheSubscriptionAndOnlyRetryRetries() {
        XCTAssertTrue(WebPushOutcome(status: 410, now: now).removesSubscription)
        XCTAssertTrue(WebPushOutcome(status: 404, now: now).removesSubscription)
        for status in [201, 400, 403, 413, 429, 503] {
            XCTAssertFalse(WebPushOutcome(status: status, now: now).removesSubscription, "\(status)")
        }
        XCTAssertTrue(WebPushOutcome(status: 429, now: now).isRetryable)
        XCTAssertFalse(WebPushOutcome(status: 413, now: now).isRetryable)
    }

    func testConfigurationErrorKeepsAPrintablePrefixOfTheBody() {
        let body = Array(#"{"reason":"BadJwtToken"}"#.utf8) + [0x0A, 0xFF] + [UInt8](repeating: 0x41, count: 500)
        guard case .configurationError(403, let detail) = WebPushOutcome(status: 403, body: body, now: now) else {
            return XCTFail("not a configuration error")
        }
        XCTAssertEqual(detail.utf8.count, WebPushOutcome.maxDetailLength)
        XCTAssertTrue(detail.hasPrefix(#"{"reason":"BadJwtToken"}??AAA"#), detail)
    }

    func testRetryAfterParsing() {
        XCTAssertEqual(RetryAfter.seconds("120", now: now), 120)
        XCTAssertEqual(RetryAfter.seconds(" 7 ", now: now), 7)
        XCTAssertEqual(RetryAfter.seconds("0", now: now), 0)
        XCTAssertEqual(
            RetryAfter.seconds("99999999999999999999999", now: now), RetryAfter.maxSeconds, "capped, no overflow")
        XCTAssertEqual(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: now), 0)
        XCTAssertEqual(RetryAfter.seconds("Sun, 06 Nov 1994 08:00:00 GMT", now: now), 0, "past date: now")
        XCTAssertEqual(RetryAfter.seconds("Mon, 07 Nov 1994 08:49:37 GMT", now: now), 86_400)
        XCTAssertEqual(RetryAfter.seconds("Fri, 31 Dec 9999 23:59:59 GMT", now: now), RetryAfter.maxSeconds)
        XCTAssertEqual(
            RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: Int.min), RetryAfter.maxSeconds, "no overflow")
        XCTAssertEqual(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: Int.max), 0, "no overflow")
        XCTAssertEqual(RetryAfter.imfFixdate("Thu, 01 Jan 1970 00:00:00 GMT"), 0)
        XCTAssertEqual(RetryAfter.imfFixdate("Tue, 29 Feb 2000 12:00:00 GMT"), 951_825_600)
        for bad in [
            "", "-5", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 36 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
        ] {
            XCTAssertNil(RetryAfter.seconds(bad, now: now), bad)
        }
    }
}
