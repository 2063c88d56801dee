import Foundation
import JSON
import XCTest

@testable import HTTPServer

final class ResponseSerializerTests: XCTestCase {
    private func render(_ response: HTTPResponse, head: Bool = false, keepAlive: Bool = true, minor: Int = 1) -> String
    {
        var out: [UInt8] = []
        ResponseSerializer.serialize(
            response, into: &out, date: Array("Mon, 30 Nov 2026 10:00:00 GMT".utf8),
            omitBody: head, keepAlive: keepAlive, minorVersion: minor, requestID: "rid",
            serverName: nil)
        return String(decoding: out, as: UTF8.self)
    }

    func testAddsDateContentLengthAndRequestID() {
        let text = render(.text("hi"))
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 10:00:00 GMT\r\n"))
        XCTAssertTrue(text.contains("\r\nContent-Length: 2\r\n"))
        XCTAssertTrue(text.contains("\r\nX-Request-ID: rid\r\n"))
        XCTAssertTrue(text.hasSuffix("\r\n\r\nhi"))
        XCTAssertFalse(text.contains("Connection:"))
    }

    func testHandlerCannotOverrideFramingHeaders() {
        var response = HTTPResponse.text("hello")
        response.headers.add("Content-Length", "999")
        response.headers.add("transfer-encoding", "chunked")
        response.headers.add("Connection", "keep-alive")
        let text = render(response, keepAlive: false)
        XCTAssertFalse(text.contains("999"))
        XCTAssertFalse(text.lowercased().contains("transfer-encoding"))
        XCTAssertTrue(text.contains("Connection: close\r\n"))
        XCTAssertFalse(text.contains("Connection: keep-alive"))
    }

    func testDropsHeadersThatWouldSplitTheResponse() {
        var response = HTTPResponse.text("x")
        response.headers.add("X-Evil", "a\r\nSet-Cookie: pwned=1")
        response.headers.add("Bad Name", "v")
        response.headers.add("X-Good", "fine")
        let text = render(response)
        XCTAssertFalse(text.contains("pwned"))
        XCTAssertFalse(text.contains("Bad Name"))
        XCTAssertTrue(text.contains("X-Good: fine\r\n"))
    }

    func testHeadKeepsContentLengthButOmitsBody() {
        let text = render(.text("hello"), head: true)
        XCTAssertTrue(text.contains("Content-Length: 5\r\n"))
        XCTAssertTrue(text.hasSuffix("\r\n\r\n"))
    }

    func testNoContentHasNoContentLengthOrBody() {
        let text = render(HTTPResponse(status: .noContent, body: Array("ignored".utf8)))
        XCTAssertFalse(text.contains("Content-Length"))
        XCTAssertFalse(text.contains("ignored"))
    }

    func testHTTP10KeepAliveIsAnnounced() {
        XCTAssertTrue(render(.text("x"), minor: 0).contains("Connection: keep-alive\r\n"))
    }

    func testErrorResponsesAreJSONWithEscaping() {
        let response = HTTPResponse(
            error: HTTPError(.badRequest, title: "Bad request", detail: "quote \" and \\ and \n"))
        XCTAssertEqual(response.status.code, 400)
        XCTAssertEqual(
            String(decoding: response.body, as: UTF8.self),
            #"{"error":"Bad request","description":"quote \" and \\ and \n"}"#, "member order and escapes")
        let object = JSONValue.parse(response.body)
        XCTAssertEqual(object?["error"], "Bad request")
        XCTAssertEqual(object?["description"], "quote \" and \\ and \n")
        XCTAssertEqual(response.headers["content-type"], "application/json")
    }

    func testDefaultErrorTitlesFollowBeamsStyle() {
        XCTAssertEqual(HTTPError(.badRequest, detail: "x").title, "Bad request")
        XCTAssertEqual(HTTPError(.notFound, detail: "x").title, "Not found")
        XCTAssertEqual(HTTPError(.internalServerError, detail: "x").title, "Something went wrong")
    }

    func testDateFormatIsIMFFixdate() {
        XCTAssertEqual(HTTPDateCache.format(784111777), "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}
