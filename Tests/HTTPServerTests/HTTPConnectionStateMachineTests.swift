import XCTest

@testable import HTTPServer

/// The connection's protocol rules, driven without sockets (`ConnectionHarness` plays the loop).
final class HTTPConnectionStateMachineTests: XCTestCase {
    private let get = "GET /health HTTP/1.1\r\nHost: h\r\n\r\n"

    func testAnswersALoopRouteAndWaitsIdleForTheNextRequest() {
        var c = ConnectionHarness()
        c.send(get)
        XCTAssertTrue(c.text.hasPrefix("HTTP/1.1 200 OK\r\nDate: \(ConnectionHarness.date)\r\n"))
        XCTAssertTrue(c.text.hasSuffix(#"{"status":"ok"}"#))
        XCTAssertFalse(c.text.contains("Connection: close"))
        XCTAssertEqual(c.phase, .idle)
        XCTAssertFalse(c.closed)
        XCTAssertEqual(c.machine.deadline, c.now + 60_000_000_000, "idle timeout")
        XCTAssertEqual(c.completed.map(\.status), [200])
    }

    func testTaskRouteRunsItsHandlerAndWritesNothingUntilItResponds() {
        var c = ConnectionHarness()
        c.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertEqual(c.handling.map { String(decoding: $0.body, as: UTF8.self) }, ["hello"])
        XCTAssertEqual(c.phase, .handling)
        XCTAssertEqual(c.machine.deadline, 0, "a running handler has no deadline")
        XCTAssertTrue(c.written.isEmpty)
        c.respond(HTTPResponse(status: .ok, body: Array("hello".utf8)))
        XCTAssertTrue(c.text.hasSuffix("hello"))
        XCTAssertEqual(c.phase, .idle)
    }

    func testPipelinedRequestsRunOneAtATimeAndAreAnsweredInOrder() {
        var c = ConnectionHarness()
        c.send(
            "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\naPOST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nb"
        )
        XCTAssertEqual(c.handling.count, 1, "the second request waits in the buffer")
        c.respond(.text("first"))
        XCTAssertEqual(c.handling.map { String(decoding: $0.body, as: UTF8.self) }, ["b"])
        c.respond(.text("second"))
        let first = c.text.range(of: "first")!.lowerBound
        let second = c.text.range(of: "second")!.lowerBound
        XCTAssertLessThan(first, second)
        XCTAssertEqual(c.completed.count, 2)
    }

    func testPipelinedLoopRoutesAreAllAnsweredFromOneRead() {
        var c = ConnectionHarness()
        c.send(String(repeating: get, count: 50))
        XCTAssertEqual(c.statusLines(200), 50)
        XCTAssertEqual(c.phase, .idle)
    }

    func testConnectionCloseRequestGetsCloseHeaderThenLingers() {
        var c = ConnectionHarness()
        c.send("GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(c.text.contains("Connection: close"))
        XCTAssertEqual(c.outputShutdowns, 1)
        XCTAssertEqual(c.phase, .lingering)
        XCTAssertEqual(c.machine.deadline, c.now + 2_000_000_000)
        c.send("late bytes are discarded")
        XCTAssertEqual(c.phase, .lingering)
        c.sendEOF()
        XCTAssertTrue(c.closed)
    }

    func testHTTP10WithoutKeepAliveClosesAfterTheResponse() {
        var c = ConnectionHarness()
        c.send("GET /health HTTP/1.0\r\n\r\n")
        XCTAssertTrue(c.text.contains("Connection: close"))
        XCTAssertEqual(c.phase, .lingering)
    }

    func testUnknownRouteWithBodyIsAnsweredWithoutReadingItAndCloses() {
        var c = ConnectionHarness()
        c.send("POST /nowhere HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertTrue(c.text.hasPrefix("HTTP/1.1 404 "))
        XCTAssertFalse(c.text.contains("100 Continue"))
        XCTAssertTrue(c.text.contains("Connection: close"))
        XCTAssertEqual(c.phase, .lingering)
    }

    func testWrongMethodGets405WithAllow() {
        var c = ConnectionHarness()
        c.send("DELETE /health HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(c.text.hasPrefix("HTTP/1.1 405 "))
        XCTAssertTrue(c.text.contains("Allow: GET, HEAD"))
        XCTAssertEqual(c.phase, .idle)
    }

    func testExpectContinueIsAnsweredWhenTheRouteAcceptsTheBody() {
        var c = ConnectionHarness()
        c.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(c.text, "HTTP/1.1 100 Continue\r\n\r\n")
        XCTAssertEqual(c.phase, .readingBody)
        XCTAssertEqual(c.machine.deadline, c.now + 30_000_000_000, "body timeout")
        c.send("hi")
        XCTAssertEqual(c.handling.count, 1)
    }

    func testBodyOverTheRouteLimitGets413WithoutContinue() {
        var c = ConnectionHarness()
        c.send("POST /small HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertTrue(c.text.hasPrefix("HTTP/1.1 413 "))
        XCTAssertFalse(c.text.contains("100 Continue"))
        XCTAssertEqual(c.phase, .lingering)
        XCTAssertEqual(c.completed.first?.rejection, .bodyTooLarge)
    }

    func testMalformedRequestGets400AndCloses() {
        var c = ConnectionHarness()
        c.send("GET /health HTTP/1.1\r\nHost: h\r\nBad Header\r\n\r\n")
        XCTAssertTrue(c.text.hasPrefix("HTTP/1.1 400 "))
        XCTAssertTrue(c.text.contains("Connection: close"))
        XCTAssertEqual(c.phase, .lingering)
        XCTAssertEqual(c.completed.first?.route, "-")
    }

    func testInvalidPercentEncodingInPathGets400() {
        var c = ConnectionHarness()
        c.send("GET /he%zzlth HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(c.text.hasPrefix("HTTP/1.1 400 "))
    }

    func testHeadRequestGetsTheGetHeadersWithoutBody() {
        var c = ConnectionHarness()
        c.send("HEAD /health HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(c.text.contains("Content-Length: 15"))
        XCTAssertTrue(c.text.hasSuffix("\r\n\r\n"))
    }

    func testHandlerErrorBecomesItsResponse() {
        var c = ConnectionHarness()
        c.send("GET /fail HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(c.text.hasPrefix("HTTP/1.1 400 "))
        XCTAssertEqual(c.phase, .idle, "a handler's error response keeps the connection")
    }

    func testHeaderTimeoutAnswers408AndLingersOnlyOneTick() {
        var c = ConnectionHarness()
        c.send("GET /health HTTP/1.1\r\nHost: h\r\n")
        XCTAssertEqual(c.phase, .readingHead)
        c.advance(seconds: 9.9)
        XCTAssertTrue(c.written.isEmpty)
        c.advance(seconds: 0.2)
        XCTAssertTrue(c.text.hasPrefix("HTTP/1.1 408 "))
        XCTAssertEqual(c.phase, .lingering)
        XCTAssertEqual(c.machine.deadline, c.now + 100_000_000)
        c.advance(seconds: 0.1)
        XCTAssertTrue(c.closed)
    }

    func testTricklingBytesDoesNotExtendTheHeaderDeadline() {
        var c = ConnectionHarness()
        c.send("GET /health HTTP/1.1\r\nHost: h\r\n")
        let deadline = c.machine.deadline
        for _ in 0..<5 {
            c.now += 1_000_000_000
            c.send("X-A: b\r\n")
        }
        XCTAssertEqual(c.machine.deadline, deadline)
    }

    func testFirstRequestHeaderClockStartsAtAccept() {
        var c = ConnectionHarness()
        let accepted = c.now
        c.now += 3_000_000_000
        c.send("GET /health HTTP/1.1\r\nHost: h\r\n")
        XCTAssertEqual(c.machine.deadline, accepted + 10_000_000_000)
    }

    func testBodyTimeoutAnswers408() {
        var c = ConnectionHarness()
        c.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
        c.advance(seconds: 31)
        XCTAssertTrue(c.text.hasPrefix("HTTP/1.1 408 "))
        XCTAssertEqual(c.completed.first?.rejection?.status, .requestTimeout)
    }

    func testIdleTimeoutClosesWithoutAResponse() {
        var c = ConnectionHarness()
        c.send(get)
        let before = c.written.count
        c.advance(seconds: 61)
        XCTAssertTrue(c.closed)
        XCTAssertEqual(c.written.count, before)
    }

    func testRunningHandlerIsNeverTimedOut() {
        var c = ConnectionHarness()
        c.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
        c.advance(seconds: 3600)
        XCTAssertFalse(c.closed)
        c.respond()
        XCTAssertEqual(c.statusLines(200), 1)
    }

    func testPartialWritesFinishTheResponseBeforeTheNextRequest() {
        var c = ConnectionHarness()
        c.writeCapacity = 10
        c.send(get + get)
        XCTAssertEqual(c.written.count, 10)
        XCTAssertEqual(c.phase, .writing)
        XCTAssertTrue(c.machine.wantsWriteEvents)
        c.drainSocket(20)
        XCTAssertEqual(c.written.count, 30)
        c.drainSocket()
        XCTAssertEqual(c.statusLines(200), 2)
        XCTAssertFalse(c.machine.wantsWriteEvents)
    }

    func testWriteTimeoutClosesWhenThePeerStopsReading() {
        var c = ConnectionHarness()
        c.writeCapacity = 0
        c.send(get)
        XCTAssertEqual(c.phase, .writing)
        c.advance(seconds: 6)
        XCTAssertTrue(c.closed)
        XCTAssertTrue(c.completed.isEmpty)
    }

    func testPipelineFloodWhileBusyPausesReadingUntilTheResponseIsOut() {
        var c = ConnectionHarness()
        c.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
        let limit = c.machine.env.maxBufferedWhileBusy
        c.send(String(repeating: "GET /health HTTP/1.1\r\nHost: h\r\n\r\n", count: limit / 20))
        XCTAssertTrue(c.machine.readPaused)
        XCTAssertFalse(c.machine.wantsReadEvents)
        XCTAssertFalse(c.inbox.isEmpty, "the rest stays with the peer")
        XCTAssertLessThanOrEqual(c.machine.parser.bufferedBytes, limit + ConnectionHarness.bufferSize)
        c.respond()
        XCTAssertFalse(c.machine.readPaused)
        XCTAssertTrue(c.inbox.isEmpty, "reading resumed once the response was out")
        XCTAssertEqual(c.statusLines(200), 1 + limit / 20)
    }

    func testEOFBetweenRequestsClosesWithoutAResponse() {
        var c = ConnectionHarness()
        c.send(get)
        c.sendEOF()
        XCTAssertTrue(c.closed)
        XCTAssertEqual(c.statusLines(200), 1)
    }

    func testEOFInTheMiddleOfARequestClosesWithoutAResponse() {
        var c = ConnectionHarness()
        c.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
        c.sendEOF()
        XCTAssertTrue(c.closed)
        XCTAssertTrue(c.written.isEmpty)
    }

    func testEOFWhileHandlingStillAnswersWithConnectionClose() {
        var c = ConnectionHarness()
        c.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
        c.sendEOF()
        XCTAssertFalse(c.closed)
        c.respond()
        XCTAssertTrue(c.text.contains("Connection: close"))
        XCTAssertTrue(c.closed, "the peer already closed: no lingering")
    }

    func testDrainingClosesAnIdleConnectionAtOnce() {
        var c = ConnectionHarness()
        c.send(get)
        c.beginDraining()
        XCTAssertTrue(c.closed)
    }

    func testDrainingLetsTheRequestInFlightFinishWithConnectionClose() {
        var c = ConnectionHarness()
        c.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
        c.beginDraining()
        XCTAssertFalse(c.closed)
        c.respond()
        XCTAssertTrue(c.text.contains("Connection: close"))
        XCTAssertTrue(c.closed, "draining: discard what arrived and close instead of lingering")
    }

    func testMaxRequestsPerConnectionClosesAfterTheLastOne() {
        var limits = ConnectionHarness.limits
        limits.maxRequestsPerConnection = 2
        var c = ConnectionHarness(limits: limits)
        c.send(get + get + get)
        XCTAssertEqual(c.statusLines(200), 2)
        XCTAssertEqual(c.text.components(separatedBy: "Connection: close").count - 1, 1)
        XCTAssertEqual(c.phase, .lingering)
    }

    func testResponseAfterTheConnectionClosedIsIgnored() {
        var c = ConnectionHarness()
        c.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
        c.run(c.machine.failed())
        XCTAssertTrue(c.closed)
        c.respond()
        XCTAssertTrue(c.written.isEmpty)
    }

    func testTLSHandshakeTimesOutAndThenReadsBufferedBytes() {
        var slow = ConnectionHarness(tls: true)
        XCTAssertEqual(slow.phase, .handshaking)
        slow.advance(seconds: 11)
        XCTAssertTrue(slow.closed)

        var c = ConnectionHarness(tls: true)
        c.inbox = Array(get.utf8)
        c.run(c.machine.handshakeCompleted(now: c.now))
        XCTAssertEqual(c.statusLines(200), 1, "bytes OpenSSL already decrypted are read without an epoll event")
    }

    func testAccessRecordCountsBytesInAndOutPerRequest() {
        var c = ConnectionHarness()
        c.send(get)
        c.send("GET /health HTTP/1.1\r\nHost: hh\r\n\r\n")
        XCTAssertEqual(c.completed.map(\.bytesIn), [get.utf8.count, get.utf8.count + 1])
        XCTAssertEqual(c.completed.reduce(0) { $0 + $1.bytesOut }, c.written.count)
        XCTAssertEqual(c.completed.map(\.route), ["/health", "/health"])
    }

    func testSaneClientRequestIDIsKeptAndOthersAreReplaced() {
        var c = ConnectionHarness()
        c.send("GET /health HTTP/1.1\r\nHost: h\r\nX-Request-ID: abc-1\r\n\r\n")
        c.send("GET /health HTTP/1.1\r\nHost: h\r\nX-Request-ID: evil value\r\n\r\n")
        XCTAssertEqual(c.completed.map(\.requestID), ["abc-1", "t-1"])
    }
}
