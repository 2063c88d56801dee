import HTTPClient
import Tracing
import XCTest

final class OTLPRetryPolicyTests: XCTestCase {
    private func answer(_ status: Int, retryAfter: String? = nil, body: String = "") -> HTTPExchangeResult {
        .success(HTTPExchangeResponse(status: status, retryAfter: retryAfter, body: Array(body.utf8)))
    }

    func testSuccessIsDoneAndAPartialSuccessCountsRejectedSpansWithoutRetry() {
        XCTAssertEqual(
            OTLPRetryPolicy.decide(answer(200), attempt: 1, remaining: 30, nowUnix: 0, jitter: 0),
            .done(rejected: 0))
        let partial = #"{"partialSuccess":{"rejectedSpans":"3","errorMessage":"too old"}}"#
        XCTAssertEqual(
            OTLPRetryPolicy.decide(answer(200, body: partial), attempt: 1, remaining: 30, nowUnix: 0, jitter: 0),
            .done(rejected: 3))
    }

    func testRetryableStatusesHonourRetryAfterInSecondsAndAsADate() {
        for status in [429, 502, 503, 504] {
            XCTAssertEqual(
                OTLPRetryPolicy.decide(
                    answer(status, retryAfter: "2"), attempt: 1, remaining: 30, nowUnix: 0,
                    jitter: 0), .retry(after: 2))
        }
        let now = 784_111_777 - 4  // Sun, 06 Nov 1994 08:49:37 GMT minus 4 s
        XCTAssertEqual(
            OTLPRetryPolicy.decide(
                answer(503, retryAfter: "Sun, 06 Nov 1994 08:49:37 GMT"), attempt: 1,
                remaining: 30, nowUnix: now, jitter: 0), .retry(after: 4))
    }

    func testWithoutRetryAfterTheBackoffGrowsAndIsCapped() {
        XCTAssertEqual(
            OTLPRetryPolicy.decide(answer(503), attempt: 1, remaining: 30, nowUnix: 0, jitter: 1), .retry(after: 1))
        XCTAssertEqual(
            OTLPRetryPolicy.decide(answer(503), attempt: 2, remaining: 30, nowUnix: 0, jitter: 1), .retry(after: 2))
        XCTAssertEqual(
            OTLPRetryPolicy.decide(answer(503), attempt: 9, remaining: 30, nowUnix: 0, jitter: 1), .retry(after: 5))
        XCTAssertEqual(
            OTLPRetryPolicy.decide(answer(503), attempt: 1, remaining: 30, nowUnix: 0, jitter: 0), .retry(after: 0.5))
    }

    func testOtherStatusesAreFinalAndARetryPastTheDeadlineIsNotMade() {
        XCTAssertEqual(
            OTLPRetryPolicy.decide(answer(400), attempt: 1, remaining: 30, nowUnix: 0, jitter: 0),
            .failed(reason: "http_400"))
        XCTAssertEqual(
            OTLPRetryPolicy.decide(answer(500), attempt: 1, remaining: 30, nowUnix: 0, jitter: 0),
            .failed(reason: "http_500"))
        XCTAssertEqual(
            OTLPRetryPolicy.decide(answer(429, retryAfter: "60"), attempt: 1, remaining: 30, nowUnix: 0, jitter: 0),
            .failed(reason: "http_429"))
    }

    func testLostConnectionsAndTimeoutsAreRetriedButARefusedDestinationIsNot() {
        XCTAssertEqual(
            OTLPRetryPolicy.decide(
                .failure(HTTPExchangeError(.connection, "reset")), attempt: 1, remaining: 30,
                nowUnix: 0, jitter: 1), .retry(after: 1))
        XCTAssertEqual(
            OTLPRetryPolicy.decide(
                .failure(HTTPExchangeError(.invalidURL, "x")), attempt: 1, remaining: 30,
                nowUnix: 0, jitter: 1), .failed(reason: "invalid_url"))
    }
}
