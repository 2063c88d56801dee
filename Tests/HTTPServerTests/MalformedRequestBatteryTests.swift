import Foundation
import HTTPServer
import JSON
import TestSupport
import XCTest

/// Hostile and malformed requests sent as raw bytes over real sockets. Each must get the right status with
/// `Connection: close`, the connection must then close, and the server must keep serving.
final class MalformedRequestBatteryTests: XCTestCase {
    struct Case {
        var name: String
        var bytes: [UInt8]
        var status: Int
    }

    static func cases() -> [Case] {
        var all: [Case] = []
        func add(_ name: String, _ text: String, _ status: Int) {
            all.append(Case(name: name, bytes: Array(text.utf8), status: status))
        }
        func addBytes(_ name: String, _ bytes: [UInt8], _ status: Int) {
            all.append(Case(name: name, bytes: bytes, status: status))
        }
        let post = "POST /echo HTTP/1.1\r\nHost: h\r\n"

        // Request smuggling: Content-Length together with Transfer-Encoding, in every order and spelling.
        add("CL then TE", post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
        add("TE then CL", post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400)
        add("CL 0 with TE", post + "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
        add("lowercase names", post + "content-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n", 400)
        add(
            "mixed case TE value with CL", post + "Content-Length: 3\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n",
            400)
        add("TE with tab and CL", post + "Content-Length: 3\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n", 400)
        add(
            "TE identity,chunked with CL", post + "Content-Length: 3\r\nTransfer-Encoding: identity, chunked\r\n\r\n",
            400)
        add("duplicate CL different", post + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400)
        add("CL list different", post + "Content-Length: 3,4\r\n\r\nabcd", 400)
        add("CL list with empty element", post + "Content-Length: 3,\r\n\r\nabc", 400)
        // Malformed Content-Length values.
        for (i, value) in ["abc", "-1", "+3", "3 3", "0x3", "3.0", "", " ", "1e3", "３", "99999999999999999999999999"]
            .enumerated()
        {
            add("bad CL #\(i) \(value)", post + "Content-Length: \(value)\r\n\r\nabc", 400)
        }
        // Transfer-Encoding whose final coding is not chunked, or unknown codings.
        add("TE gzip", post + "Transfer-Encoding: gzip\r\n\r\n", 400)
        add("TE chunked then gzip", post + "Transfer-Encoding: chunked, gzip\r\n\r\n", 400)
        add("TE unknown", post + "Transfer-Encoding: bogus\r\n\r\n", 400)
        add("TE xchunked", post + "Transfer-Encoding: xchunked\r\n\r\n", 400)
        add("TE chunked with parameter", post + "Transfer-Encoding: chunked;q=1\r\n\r\n", 400)
        add("TE chunked twice", post + "Transfer-Encoding: chunked, chunked\r\n\r\n", 400)
        add("TE chunked in two fields", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400)
        add("TE empty", post + "Transfer-Encoding:\r\n\r\n", 400)
        add("TE gzip before chunked", post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501)
        add("TE unknown before chunked", post + "Transfer-Encoding: foo, chunked\r\n\r\n0\r\n\r\n", 501)
        add("TE in HTTP/1.0", "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
        // Chunk framing.
        let chunked = post + "Transfer-Encoding: chunked\r\n\r\n"
        add("chunk size not hex", chunked + "zz\r\nabc\r\n0\r\n\r\n", 400)
        add("chunk size empty", chunked + "\r\nabc\r\n0\r\n\r\n", 400)
        add("chunk size negative", chunked + "-3\r\nabc\r\n0\r\n\r\n", 400)
        add("chunk size overflow", chunked + "fffffffffffffffffffffff\r\n", 400)
        add("chunk size with 0x", chunked + "0x3\r\nabc\r\n0\r\n\r\n", 400)
        add("chunk data too long", chunked + "3\r\nabcdef\r\n0\r\n\r\n", 400)
        add("chunk line bare LF", chunked + "3\nabc\r\n0\r\n\r\n", 400)
        add("chunk extension with NUL", chunked + "3;a\u{0}\r\nabc\r\n0\r\n\r\n", 400)
        add("chunked body too large", chunked + "10001\r\n", 413)
        add("trailer obs-fold", chunked + "0\r\nX: a\r\n b\r\n\r\n", 400)
        add("trailer bad name", chunked + "0\r\nX y: a\r\n\r\n", 400)
        // obs-fold.
        add("obs-fold space", "GET /health HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n 2\r\n\r\n", 400)
        add("obs-fold tab", "GET /health HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\t2\r\n\r\n", 400)
        add("obs-fold first header", "GET /health HTTP/1.1\r\n Host: h\r\n\r\n", 400)
        // Bare CR / bare LF line endings (bare LF is rejected, never treated as a line end).
        add("bare LF after request line", "GET /health HTTP/1.1\nHost: h\r\n\r\n", 400)
        add("bare LF after header", "GET /health HTTP/1.1\r\nHost: h\n\r\n", 400)
        add("bare LF terminator", "GET /health HTTP/1.1\r\nHost: h\r\n\n", 400)
        add("all bare LF", "GET /health HTTP/1.1\nHost: h\n\n", 400)
        add("bare CR inside header", "GET /health HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400)
        add("bare CR in request line", "GET /health\rHTTP/1.1\r\nHost: h\r\n\r\n", 400)
        add("CR CR LF", "GET /health HTTP/1.1\r\r\nHost: h\r\n\r\n", 400)
        // NUL and other control characters in header values.
        for c in (UInt8(0)...UInt8(31)).filter({ $0 != 9 }) + [127] {
            addBytes(
                "control \(c) in value",
                Array("GET /health HTTP/1.1\r\nHost: h\r\nX-A: a".utf8) + [c] + Array("b\r\n\r\n".utf8), 400)
        }
        addBytes(
            "NUL in header name", Array("GET /health HTTP/1.1\r\nHost: h\r\nX".utf8) + [0] + Array("A: b\r\n\r\n".utf8),
            400)
        // Whitespace before the colon.
        add("space before colon", "GET /health HTTP/1.1\r\nHost : h\r\n\r\n", 400)
        add("tab before colon", "GET /health HTTP/1.1\r\nHost\t: h\r\n\r\n", 400)
        add("space before colon in CL", post + "Content-Length : 3\r\n\r\nabc", 400)
        // Invalid header-name token characters.
        for (i, c) in "()<>@,;\\\"/[]?={}".enumerated() {
            add("header name char #\(i) \(c)", "GET /health HTTP/1.1\r\nHost: h\r\nX\(c)Y: v\r\n\r\n", 400)
        }
        add("empty header name", "GET /health HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400)
        add("header without colon", "GET /health HTTP/1.1\r\nHost: h\r\nJunk\r\n\r\n", 400)
        addBytes(
            "non-ASCII header name",
            Array("GET /health HTTP/1.1\r\nHost: h\r\nX".utf8) + [0xC3, 0xA9] + Array(": v\r\n\r\n".utf8), 400)
        // Methods that are not tokens.
        for (i, method) in ["G(ET", "GE:T", "\"GET\"", "GET\u{1}", "{GET}", "G/T"].enumerated() {
            add("bad method #\(i)", "\(method) /health HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        }
        // Versions.
        for version in ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/9.9"] {
            add("version \(version)", "GET /health \(version)\r\nHost: h\r\n\r\n", 505)
        }
        for version in ["HTTP/1.1 ", "http/1.1", "HTTP/1", "HTTP/1.1.1", "HTTP/x.y", "FOO/1.1", "HTTP/01.1"] {
            add("malformed version \(version)", "GET /health \(version)\r\nHost: h\r\n\r\n", 400)
        }
        // Request line shape.
        add("double space", "GET  /health HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        add("missing version", "GET /health\r\nHost: h\r\n\r\n", 400)
        add("leading space", " GET /health HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        add("relative target", "GET health HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        add("asterisk on GET", "GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        addBytes(
            "non-ASCII target", Array("GET /h".utf8) + [0xC3, 0xA9] + Array(" HTTP/1.1\r\nHost: h\r\n\r\n".utf8), 400)
        add("DEL in target", "GET /he\u{7F}alth HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        add("bad percent escape", "GET /items/%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        add("truncated percent escape", "GET /items/% HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        add("percent escape invalid UTF-8", "GET /items/%ff HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        // Host rules.
        add("missing Host", "GET /health HTTP/1.1\r\n\r\n", 400)
        add("two Hosts", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400)
        // Expectations.
        add("unknown expectation", post + "Expect: 200-ok\r\nContent-Length: 1\r\n\r\na", 417)
        // Limits (test server: request line 1 KiB, headers 4 KiB, 30 fields, body 64 KiB).
        add("request line too long", "GET /\(String(repeating: "a", count: 2000)) HTTP/1.1\r\nHost: h\r\n\r\n", 414)
        add(
            "header section too large",
            "GET /health HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "b", count: 5000))\r\n\r\n", 431)
        add(
            "many mid-size headers",
            "GET /health HTTP/1.1\r\nHost: h\r\n"
                + (0..<25).map { "X\($0): \(String(repeating: "c", count: 200))\r\n" }.joined() + "\r\n", 431)
        add(
            "too many headers",
            "GET /health HTTP/1.1\r\nHost: h\r\n" + (0..<40).map { "X\($0): v\r\n" }.joined() + "\r\n", 431)
        add("body too large", post + "Content-Length: 70000\r\n\r\n", 413)
        add("body far too large", post + "Content-Length: 999999999999\r\n\r\n", 413)
        add("route body too large", "POST /publish HTTP/1.1\r\nHost: h\r\nContent-Length: 20000\r\n\r\n", 400)
        return all
    }

    func testBatteryOfMalformedRequestsGetsRightStatusAndClose() throws {
        let server = try TestServer()
        defer { server.stop() }
        let cases = Self.cases()
        XCTAssertGreaterThanOrEqual(cases.count, 100)
        print("malformed battery: \(cases.count) cases")
        for (i, c) in cases.enumerated() {
            do {
                let client = try server.client(timeout: 3)
                try client.send(c.bytes)
                let response = try client.readResponse()
                XCTAssertEqual(response.status, c.status, c.name)
                XCTAssertTrue(response.closesConnection, "\(c.name): Connection: close expected")
                let json = response.jsonObject
                XCTAssertNotNil(json?["error"]?.stringValue, "\(c.name): JSON error body")
                XCTAssertNotNil(json?["description"]?.stringValue, "\(c.name): JSON description")
                XCTAssertTrue(client.waitForClose(within: 3), "\(c.name): connection should close")
            } catch {
                XCTFail("\(c.name): \(error)")
            }
            if i % 10 == 0 { server.assertHealthy() }
        }
        server.assertHealthy()
    }

    func testMalformedRequestAfterValidOneOnSameConnectionStillAnswersBoth() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.client()
        try client.send("GET /health HTTP/1.1\r\nHost: h\r\n\r\nGET /health HTTP/1.1\r\nHost : h\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        let second = try client.readResponse()
        XCTAssertEqual(second.status, 400)
        XCTAssertTrue(second.closesConnection)
        XCTAssertTrue(client.waitForClose(within: 2))
    }
}
