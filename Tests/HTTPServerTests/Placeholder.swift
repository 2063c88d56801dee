import XCTest
@testable import HTTPServer

final class QuickTests: XCTestCase {
    func testQuick() {
        var p = RequestParser()
        p.append(Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n{\"a\":[1,2]}".utf8))
        guard case .head(let h) = p.next() else { return XCTFail() }
        print(h.framing)
        print(p.beginBody(limit: 100))
        let e = p.next()
        print(e)
    }
}
