import XCTest

@testable import HTTPServer

final class RequestParserTests: XCTestCase {
    // MARK: Valid requests

    func testParsesSimpleGetWithCaseInsensitiveHeaders() {
        let o = parse("GET /a/b?x=1 HTTP/1.1\r\nHost: example\r\nX-Thing: one\r\nx-thing: two\r\n\r\n")
        XCTAssertNil(o.error)
        XCTAssertEqual(o.heads.count, 1)
        let head = o.heads[0]
        XCTAssertEqual(head.method, .get)
        XCTAssertEqual(head.target, "/a/b?x=1")
        XCTAssertEqual(head.minorVersion, 1)
        XCTAssertEqual(head.headers["HOST"], "example")
        XCTAssertEqual(head.headers.values("X-THING"), ["one", "two"])
        XCTAssertEqual(head.framing, .none)
        XCTAssertEqual(o.bodies, [[]])
    }

    func testTrimsOptionalWhitespaceAroundHeaderValues() {
        let o = parse("GET / HTTP/1.1\r\nHost:   h \t\r\nX-A:\tv  w \r\n\r\n")
        XCTAssertEqual(o.heads.first?.headers["x-a"], "v  w")
        XCTAssertEqual(o.heads.first?.headers["host"], "h")
    }

    func testReadsContentLengthBody() {
        let o = parse("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertNil(o.error)
        XCTAssertEqual(o.bodies, [Array("hello".utf8)])
    }

    func testReadsChunkedBodyWithExtensionsAndTrailers() {
        let o = parse(
            "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;name=value\r\nhello\r\n6 ; x=\"q\"\r\n world\r\n0;last\r\nX-Trailer: t1\r\nX-Other: t2\r\n\r\n")
        XCTAssertNil(o.error)
        XCTAssertEqual(o.heads.first?.framing, .chunked)
        XCTAssertEqual(o.bodies, [Array("hello world".utf8)])
        XCTAssertEqual(o.trailers.first?["x-trailer"], "t1")
        XCTAssertEqual(o.trailers.first?["X-OTHER"], "t2")
    }

    func testTransferEncodingChunkedIsCaseInsensitive() {
        let o = parse("POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ChUnKeD\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        XCTAssertEqual(o.bodies, [Array("abc".utf8)])
    }

    func testByteByByteFeedingGivesTheSameResult() {
        let text =
            "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n"
            + "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"
        for sizes in [[1], [2], [3, 7], [13]] {
            let o = parse(text, chunkSizes: sizes)
            XCTAssertNil(o.error, "sizes \(sizes)")
            XCTAssertEqual(o.bodies, [Array("wikipedia".utf8), []], "sizes \(sizes)")
            XCTAssertEqual(o.heads.map(\.target), ["/p", "/next"], "sizes \(sizes)")
        }
    }

    func testPipelinedRequestsAreParsedInOrder() {
        let o = parse(
            "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhiGET /3 HTTP/1.1\r\nHost: h\r\n\r\n"
        )
        XCTAssertNil(o.error)
        XCTAssertEqual(o.heads.map(\.target), ["/1", "/2", "/3"])
        XCTAssertEqual(o.bodies, [[], Array("hi".utf8), []])
    }

    func testIgnoresEmptyLinesBeforeRequestLine() {
        let o = parse("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertNil(o.error)
        XCTAssertEqual(o.heads.count, 1)
    }

    func testKeepAliveDefaultsFollowTheVersion() {
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n").heads.first?.keepAlive, true)
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").heads.first?.keepAlive, false)
        XCTAssertEqual(
            parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, Close\r\n\r\n").heads.first?.keepAlive, false)
        XCTAssertEqual(parse("GET / HTTP/1.0\r\n\r\n").heads.first?.keepAlive, false)
        XCTAssertEqual(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").heads.first?.keepAlive, true)
    }

    func testExpectContinueIsReportedOnlyForHTTP11WithBody() {
        let o = parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\nabc")
        XCTAssertEqual(o.heads.first?.expectsContinue, true)
        XCTAssertEqual(o.continueSent, 1)
        XCTAssertEqual(o.bodies, [Array("abc".utf8)])
        XCTAssertEqual(
            parse("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\na").heads.first?.expectsContinue,
            false)
        XCTAssertEqual(
            parse("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n").heads.first?.expectsContinue, false)
    }

    func testRejectsUnknownExpectationWith417() {
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\na").status, 417)
    }

    func testExpectContinueWithTooLargeBodyIsRejectedWithoutReading() {
        let o = parse(
            "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n", bodyLimit: 10)
        XCTAssertEqual(o.status, 413)
        XCTAssertEqual(o.continueSent, 0)
        XCTAssertEqual(o.error?.isBodyTooLarge, true)
    }

    func testAcceptsRepeatedIdenticalContentLength() {
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab").bodies,
            [Array("ab".utf8)])
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2, 2\r\n\r\nab").bodies, [Array("ab".utf8)])
    }

    func testAcceptsAbsoluteFormAndAsteriskForOptions() {
        XCTAssertNil(parse("GET http://h/x?y HTTP/1.1\r\nHost: h\r\n\r\n").error)
        XCTAssertNil(parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").error)
        XCTAssertEqual(parse("GET * HTTP/1.1\r\nHost: h\r\n\r\n").status, 400)
    }

    func testParsesUncommonTokenMethods() {
        XCTAssertEqual(parse("PROPFIND / HTTP/1.1\r\nHost: h\r\n\r\n").heads.first?.method.rawValue, "PROPFIND")
    }

    func testHTTP10DoesNotRequireHost() {
        XCTAssertNil(parse("GET / HTTP/1.0\r\n\r\n").error)
    }

    func testIsIdleOnlyBetweenRequests() {
        var parser = RequestParser()
        XCTAssertTrue(parser.isIdle)
        parser.append(Array("GET / HTTP/1.1\r\n".utf8))
        XCTAssertFalse(parser.isIdle)
        parser.append(Array("Host: h\r\n\r\n".utf8))
        guard case .head = parser.next() else { return XCTFail("no head") }
        XCTAssertEqual(parser.beginBody(limit: 0), .noBody)
        guard case .body = parser.next() else { return XCTFail("no body") }
        XCTAssertTrue(parser.isIdle)
    }

    // MARK: Smuggling and framing errors

    func testRejectsChunkedBodyWithContentLength() {
        XCTAssertEqual(
            parse(
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
            ).status, 400)
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n").status, 400)
    }

    func testRejectsConflictingContentLengths() {
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd").status, 400)
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\nabcd").status, 400)
    }

    func testRejectsMalformedContentLength() {
        for value in ["abc", "-1", "+5", "1 2", "", "0x10", "1.0", "5,", " ,5", "１"] {
            XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \(value)\r\n\r\n").status, 400, value)
        }
    }

    func testRejectsContentLengthOverflow() {
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n").status, 400)
    }

    func testRejectsTransferEncodingNotEndingInChunked() {
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n").status, 400)
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n").status, 400)
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n").status, 400)
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n").status,
            400)
    }

    func testRejectsChunkedAppliedTwice() {
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n").status, 400)
    }

    func testRejectsUnimplementedCodingBeforeChunkedWith501() {
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").status, 501)
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: foo\r\nTransfer-Encoding: chunked\r\n\r\n").status,
            501)
    }

    func testRejectsEmptyTransferEncoding() {
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \r\n\r\n").status, 400)
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ,chunked\r\n\r\n").status, 400)
    }

    func testRejectsTransferEncodingInHTTP10() {
        XCTAssertEqual(parse("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").status, 400)
    }

    func testRejectsInvalidChunkSize() {
        for size in ["x", "", "-1", " 5", "5x", "0x5"] {
            XCTAssertEqual(
                parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n")
                    .status, 400, size)
        }
    }

    func testRejectsChunkSizeOverflow() {
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n").status,
            400)
    }

    func testRejectsChunkDataWithoutTrailingCRLF() {
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n").status, 400)
    }

    func testRejectsControlCharactersInChunkExtension() {
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;a=\u{01}\r\nabc\r\n0\r\n\r\n")
                .status, 400)
    }

    func testRejectsChunkedBodyOverLimitWith413() {
        let o = parse(
            "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n",
            bodyLimit: 10)
        XCTAssertEqual(o.status, 413)
        XCTAssertEqual(o.error?.isBodyTooLarge, true)
    }

    func testRejectsContentLengthOverLimitWith413WithoutReading() {
        let o = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", bodyLimit: 10)
        XCTAssertEqual(o.status, 413)
    }

    // MARK: Line and field syntax

    func testRejectsBareLFLineEndings() {
        XCTAssertEqual(parse("GET / HTTP/1.1\nHost: h\r\n\r\n").status, 400)
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\n\r\n").status, 400)
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\n\n").status, 400)
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n").status, 400)
    }

    func testRejectsBareCR() {
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n").status, 400)
        XCTAssertEqual(parse("GET / HTTP/1.1\rHost: h\r\n\r\n").status, 400)
        XCTAssertEqual(parse("GET /\r HTTP/1.1\r\nHost: h\r\n\r\n").status, 400)
    }

    func testRejectsObsFold() {
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\nX-A: one\r\n two\r\n\r\n").status, 400)
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\nX-A: one\r\n\ttwo\r\n\r\n").status, 400)
    }

    func testRejectsWhitespaceBeforeColon() {
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost : h\r\n\r\n").status, 400)
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\nContent-Length\t: 0\r\n\r\n").status, 400)
    }

    func testRejectsInvalidHeaderNameCharacters() {
        for name in ["X(y)", "X/y", "X@y", "X\"y", "", "X{y}", "Ä"] {
            XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\n\(name): v\r\n\r\n").status, 400, name)
        }
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n").status, 400)
    }

    func testRejectsNULAndControlCharactersInHeaderValues() {
        for c in [0x00, 0x01, 0x08, 0x0B, 0x0C, 0x1F, 0x7F] as [UInt8] {
            let bytes = Array("GET / HTTP/1.1\r\nHost: h\r\nX: a".utf8) + [c] + Array("b\r\n\r\n".utf8)
            XCTAssertEqual(parse(bytes).status, 400, "byte \(c)")
        }
    }

    func testAcceptsObsTextInHeaderValues() {
        let bytes = Array("GET / HTTP/1.1\r\nHost: h\r\nX: caf".utf8) + [0xC3, 0xA9] + Array("\r\n\r\n".utf8)
        XCTAssertEqual(parse(bytes).heads.first?.headers["x"], "café")
    }

    func testRejectsNonTokenMethods() {
        for method in ["G@T", "GE(T", "\"GET\"", "GET\u{01}", "GÉT"] {
            XCTAssertEqual(parse("\(method) / HTTP/1.1\r\nHost: h\r\n\r\n").status, 400, method)
        }
    }

    // MARK: Early rejection of bytes no method can hold

    /// Feeds `bytes` (no line end anywhere) and returns the parser's verdict without waiting for more.
    private func verdict(_ bytes: [UInt8], chunkSizes: [Int]? = nil) -> ParseOutcome {
        XCTAssertFalse(bytes.contains(ASCII.lf), "the point is that no line end arrives")
        return parse(bytes, chunkSizes: chunkSizes)
    }

    func testRejectsTLSClientHelloAtItsFirstByte() {
        XCTAssertEqual(verdict([0x16]).error, .bad("Invalid method"))
        XCTAssertEqual(verdict([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]).status, 400)
    }

    func testRejectsBinaryAndNonTokenBytesBeforeTheLineEnds() {
        for bytes: [UInt8] in [
            [0x00], [0x80], [0xFF], Array("GE".utf8) + [0x01], Array("PO".utf8) + [0xC3, 0xA9],
            Array("GET\t".utf8), Array("{\"a\":1}".utf8), Array("GET(".utf8), Array(" GET".utf8),
        ] {
            XCTAssertEqual(verdict(bytes).status, 400, "\(bytes)")
        }
    }

    func testRejectsMethodCutShortByALineEnd() {
        XCTAssertEqual(verdict(Array("GET\r".utf8)).error, .bad("Invalid method"))
        XCTAssertEqual(parse("GET\n").error, .bad("Invalid method"))
    }

    func testRejectsStrayCROrBareLFBeforeTheRequestLine() {
        XCTAssertEqual(verdict(Array("\rGET".utf8)).error, .bad("Invalid method"))
        XCTAssertEqual(parse("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n").error, .bad("Bare LF line ending"))
    }

    func testWaitsWhileTheMethodSoFarIsAToken() {
        for bytes in ["G", "GET", "M-SEARCH", String(repeating: "X", count: 500), "\r"] {
            let outcome = verdict(Array(bytes.utf8), chunkSizes: [1])
            XCTAssertNil(outcome.error, bytes)
            XCTAssertTrue(outcome.heads.isEmpty, bytes)
        }
        XCTAssertNil(parse("\r\n\r\nGE", chunkSizes: [1]).error)
    }

    func testEmptyLineSplitBetweenCRAndLFBeforeTheRequestLineIsAccepted() {
        let outcome = parse("\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", chunkSizes: [1])
        XCTAssertNil(outcome.error)
        XCTAssertEqual(outcome.heads.map(\.target), ["/"])
    }

    func testMethodOfTheNextPipelinedRequestIsCheckedAfresh() {
        let good = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
        let outcome = parse(Array(good.utf8) + [0x16, 0x03, 0x01])
        XCTAssertEqual(outcome.heads.map(\.target), ["/1"])
        XCTAssertEqual(outcome.bodies.count, 1)
        XCTAssertEqual(outcome.error, .bad("Invalid method"))
        // A long method of a second request, trickled: nothing is rejected until a non-token byte.
        XCTAssertNil(parse(good + "PROPFIND", chunkSizes: [1]).error)
    }

    /// Found by libFuzzer (fuzz/Sources/HTTPParserFuzz): a method of token bytes running past the request-line limit,
    /// then a byte no method holds. Fed whole it got 400 (the method check saw the byte first), in reads that crossed
    /// the limit before the byte came it got 414. Where the stream is split must not change the answer.
    func testOverlongMethodWithANonTokenByteGetsTheSameAnswerHoweverItIsSplit() {
        let limits = RequestParser.Limits(
            maxRequestLineBytes: 64, maxHeaderBytes: 256, maxHeaderCount: 8,
            maxChunkLineBytes: 32)
        let bytes = Array(String(repeating: "N", count: 75).utf8) + [0x80] + Array("NN".utf8)
        let whole = parse(bytes, limits: limits)
        XCTAssertEqual(whole.error, .requestLineTooLong)
        for sizes in [[1], [15, 5], [66], [70, 8]] {
            XCTAssertEqual(parse(bytes, limits: limits, chunkSizes: sizes).error, whole.error, "reads of \(sizes)")
        }
        // Within the limit the byte is still refused at once, whole or trickled.
        let short = Array("NNN".utf8) + [0x80]
        XCTAssertEqual(parse(short, limits: limits).error, .bad("Invalid method"))
        XCTAssertEqual(parse(short, limits: limits, chunkSizes: [1]).error, .bad("Invalid method"))
        // The fuzzer's own input (its first two bytes chose 15- and 5-byte reads and these limits).
        func n(_ count: Int) -> String { String(repeating: "N", count: count) }
        let found =
            Array("NNN%NNNNNeRa\(n(35))feRa\(n(8))c\(n(7))UnsafeRa".utf8) + Array(repeating: 0x80, count: 53)
            + Array("\(n(35))feRa\(n(8))c".utf8)
        XCTAssertEqual(found.count, 176)
        XCTAssertEqual(parse(found, limits: limits, chunkSizes: [15, 5]).error, parse(found, limits: limits).error)
    }

    func testRejectsMalformedRequestLines() {
        for line in [
            "GET /", "GET  / HTTP/1.1", "GET / HTTP/1.1 ", " GET / HTTP/1.1", "GET / / HTTP/1.1", "GET", "/ HTTP/1.1",
            "GET x HTTP/1.1", "GET /\u{7F} HTTP/1.1", "GET /é HTTP/1.1",
        ] {
            XCTAssertEqual(parse("\(line)\r\nHost: h\r\n\r\n").status, 400, line)
        }
    }

    func testRejectsUnsupportedVersionsWith505() {
        for version in ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0"] {
            XCTAssertEqual(parse("GET / \(version)\r\nHost: h\r\n\r\n").status, 505, version)
        }
    }

    func testRejectsMalformedVersionsWith400() {
        for version in ["http/1.1", "HTTP/1.1x", "HTTP/11", "HTTP/1", "HTTPS/1.1", "HTTP/a.b", "HTTP/1.10"] {
            XCTAssertEqual(parse("GET / \(version)\r\nHost: h\r\n\r\n").status, 400, version)
        }
    }

    func testRejectsMissingOrRepeatedHostInHTTP11() {
        XCTAssertEqual(parse("GET / HTTP/1.1\r\n\r\n").status, 400)
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").status, 400)
    }

    // MARK: Limits

    func testRejectsOversizedRequestLineWith414() {
        let limits = RequestParser.Limits(maxRequestLineBytes: 100)
        XCTAssertEqual(
            parse("GET /\(String(repeating: "a", count: 200)) HTTP/1.1\r\nHost: h\r\n\r\n", limits: limits).status, 414)
        // Detected before the line ends.
        XCTAssertEqual(parse("GET /\(String(repeating: "a", count: 200))", limits: limits).status, 414)
        XCTAssertNil(
            parse("GET /\(String(repeating: "a", count: 80)) HTTP/1.1\r\nHost: h\r\n\r\n", limits: limits).error)
    }

    func testRejectsOversizedHeadersWith431() {
        let limits = RequestParser.Limits(maxHeaderBytes: 100)
        XCTAssertEqual(
            parse("GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "a", count: 200))\r\n\r\n", limits: limits)
                .status, 431)
        XCTAssertEqual(
            parse("GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "a", count: 200))", limits: limits).status, 431)
        let many = (0..<10).map { "X\($0): \(String(repeating: "b", count: 10))\r\n" }.joined()
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\n\(many)\r\n", limits: limits).status, 431)
    }

    func testRejectsTooManyHeadersWith431() {
        let limits = RequestParser.Limits(maxHeaderCount: 5)
        let fields = (0..<6).map { "X\($0): v\r\n" }.joined()
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n", limits: limits).status, 431)
        let four = (0..<4).map { "X\($0): v\r\n" }.joined()
        XCTAssertNil(parse("GET / HTTP/1.1\r\nHost: h\r\n\(four)\r\n", limits: limits).error)
    }

    func testRejectsTooManyTrailersWith431() {
        let limits = RequestParser.Limits(maxHeaderCount: 3)
        let trailers = (0..<4).map { "T\($0): v\r\n" }.joined()
        XCTAssertEqual(
            parse(
                "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\(trailers)\r\n", limits: limits
            ).status, 431)
    }

    func testErrorIsSticky() {
        var parser = RequestParser()
        parser.append(Array("GET / HTTP/9.9\r\n".utf8))
        guard case .error(let e) = parser.next() else { return XCTFail("expected error") }
        XCTAssertEqual(e.status.code, 505)
        parser.append(Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8))
        guard case .error = parser.next() else { return XCTFail("error should stick") }
    }
}
