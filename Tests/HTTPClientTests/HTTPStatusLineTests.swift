import HTTPClient
import XCTest

final class HTTPStatusLineTests: XCTestCase {
    private func code(_ line: String) -> Int? {
        Array(line.utf8).withUnsafeBufferPointer { HTTPStatusLine.code(of: $0) }
    }

    func testReadsTheThreeDigitsAfterTheFirstSpace() {
        XCTAssertEqual(code("HTTP/2 200 \r\n"), 200)
        XCTAssertEqual(code("HTTP/2 410\r\n"), 410)
        XCTAssertEqual(code("HTTP/1.1 100 Continue\r\n"), 100)
    }

    func testStatusLineWithoutThreeDigitsReadsAsZero() {
        XCTAssertEqual(code("HTTP/2 20"), 0)
        XCTAssertEqual(code("HTTP/2 2x0 \r\n"), 0)
        XCTAssertEqual(code("HTTP/2"), 0)
    }

    func testOtherHeaderLinesAreNotStatusLines() {
        XCTAssertNil(code("apns-id: 123\r\n"))
        XCTAssertNil(code("\r\n"))
        XCTAssertNil(code("HTTP"))
    }
}
