import XCTest

@testable import HTTPServer

/// Admission is decided when the request head arrives (`.admit`), before the body is read or `100 Continue` is
/// sent; and the idle keep-alive state that eviction and the short idle timeout under pressure look at. Without
/// sockets (`ConnectionHarness`).
final class HeadAdmissionTests: XCTestCase {
    private static let refusal = HTTPResponse(error: HTTPError(HTTPStatus(429), detail: "Too many requests"))

    func testAdmissionSeesTheHeadWithTheDeclaredBodySizeBeforeAnyBodyByte() {
        var h = ConnectionHarness()
        h.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n")
        XCTAssertEqual(h.admissions.count, 1)
        XCTAssertEqual(h.admissions.first?.bodyBytes, 5)
        XCTAssertEqual(h.admissions.first?.request.body, [])
        XCTAssertEqual(h.phase, .readingBody)
        h.send("hello")
        XCTAssertEqual(h.handling.first?.body, Array("hello".utf8))
    }

    func testARefusedLargeBodyIsAnsweredAtOnceWithoutReadingItAndTheConnectionCloses() {
        var limits = ConnectionHarness.limits
        limits.maxBodyBytes = 1 << 20
        var h = ConnectionHarness(limits: limits)
        h.admissionRefusal = Self.refusal
        h.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n")
        XCTAssertEqual(h.statusLines(429), 1, "answered without waiting for the 100000 declared bytes")
        XCTAssertTrue(h.text.contains("Connection: close"), h.text)
        XCTAssertEqual(h.outputShutdowns, 1)
        XCTAssertTrue(h.handling.isEmpty)
    }

    func testARefusedRequestThatExpectsContinueGetsNoContinue() {
        var h = ConnectionHarness()
        h.admissionRefusal = Self.refusal
        h.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertFalse(h.text.contains("100 Continue"), h.text)
        XCTAssertEqual(h.statusLines(429), 1)
    }

    func testAnAdmittedRequestThatExpectsContinueGetsItAfterAdmission() {
        var h = ConnectionHarness()
        h.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(h.admissions.count, 1)
        XCTAssertEqual(h.statusLines(100), 1)
    }

    func testARefusedSmallBodyIsDroppedAndTheNextPipelinedRequestIsServed() {
        var h = ConnectionHarness()
        h.admissionRefusal = Self.refusal
        h.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhiGET /health HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(h.statusLines(429), 1)
        XCTAssertEqual(h.statusLines(200), 1, h.text)
        XCTAssertFalse(h.closed)
        XCTAssertTrue(h.handling.isEmpty, "the refused request never reached its handler")
    }

    func testARefusedRequestWithoutABodyKeepsTheConnectionForTheNextRequest() {
        var h = ConnectionHarness()
        h.admissionRefusal = Self.refusal
        h.send("GET /guarded HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(h.statusLines(429), 1)
        XCTAssertFalse(h.closed)
        XCTAssertEqual(h.phase, .idle)
        h.admissionRefusal = nil
        h.send("GET /guarded HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(h.statusLines(200), 1, "the next request on the same connection reached its handler")
        XCTAssertEqual(h.admissions.count, 2)
        XCTAssertFalse(h.closed)
    }

    func testABodyOnABodylessRouteIsRefusedFromItsHead() {
        var h = ConnectionHarness()
        h.send("POST /small HTTP/1.1\r\nHost: h\r\nContent-Length: 1048576\r\n\r\n")
        XCTAssertEqual(h.statusLines(413), 1)
        XCTAssertTrue(h.admissions.isEmpty, "refused by the body limit before admission")
    }

    func testAHeadSentWithAHugeBodyIsDecidedBeforeTheBodyIsBuffered() {
        var limits = ConnectionHarness.limits
        limits.maxBodyBytes = 1 << 20
        var h = ConnectionHarness(limits: limits)
        h.admissionRefusal = Self.refusal
        h.send(
            "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 200000\r\n\r\n" + String(repeating: "x", count: 200_000))
        XCTAssertEqual(h.statusLines(429), 1)
        XCTAssertLessThan(h.machine.parser.bufferedBytes, 100_000, "reading stopped once a head's worth was in")
    }

    func testAConnectionIsAnIdleKeepAliveOnlyBetweenRequestsAfterAResponse() {
        var h = ConnectionHarness()
        XCTAssertFalse(h.machine.isIdleKeepAlive, "a fresh connection waits for its first head")
        h.send("GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(h.machine.isIdleKeepAlive)
        XCTAssertFalse(h.machine.idleKeepAliveExpired(now: h.now + 4_000_000_000, after: 5_000_000_000))
        XCTAssertTrue(h.machine.idleKeepAliveExpired(now: h.now + 5_000_000_000, after: 5_000_000_000))
        h.send("GET /heal")
        XCTAssertFalse(h.machine.isIdleKeepAlive, "a request has begun")
    }
}
