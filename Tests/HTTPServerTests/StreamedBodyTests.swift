import Foundation
import HTTPServer
import Locking
import TestSupport
import XCTest

/// Bodies written while they are sent (`HTTPResponse.stream`): chunked to HTTP/1.1 clients, close-delimited to
/// HTTP/1.0 ones, the producer held back by a slow reader, and stopped when the client goes away.
final class StreamedBodyTests: XCTestCase {
    /// Outcomes of the producers the routes start.
    let producerErrors = Locked<[String]>([])
    let written = Locked(0)
    var server: TestServer!

    override func setUpWithError() throws {
        let errors = producerErrors
        let written = self.written
        server = try TestServer { router in
            // `?chunks=N&size=S`: N chunks of S bytes ('a' + chunk number), from a thread of its own.
            router.get("/stream") { request in
                let chunks = Int(request.queryValue("chunks") ?? "") ?? 3
                let size = Int(request.queryValue("size") ?? "") ?? 10
                let fail = request.queryValue("fail") == "1"
                let stream = HTTPBodyStream(maxBuffered: 64 * 1024)
                Thread {
                    do {
                        for n in 0..<chunks {
                            try stream.write([UInt8](repeating: UInt8(ascii: "a") + UInt8(n % 26), count: size))
                            written.withLock { $0 += size }
                        }
                        stream.finish(failed: fail)
                    } catch {
                        errors.withLock { $0.append("closed") }
                    }
                }.start()
                return .streamed(headers: ["Content-Type": "application/x-ndjson"], stream)
            }
        }
    }

    override func tearDown() {
        server?.stop()
        server = nil
    }

    func testChunksArriveInOrderAndTheConnectionIsKept() throws {
        let client = try server.client()
        let response = try client.request("GET", "/stream?chunks=3&size=10")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("transfer-encoding"), "chunked")
        XCTAssertNil(response.header("content-length"))
        XCTAssertEqual(
            response.bodyText,
            String(repeating: "a", count: 10) + String(repeating: "b", count: 10)
                + String(repeating: "c", count: 10))
        XCTAssertEqual(try client.request("GET", "/health").status, 200, "the connection goes on after the last chunk")
    }

    func testHTTP10ClientGetsTheBodyUntilTheClose() throws {
        let client = try server.client()
        try client.send("GET /stream?chunks=2&size=5 HTTP/1.0\r\n\r\n")
        let bytes = try client.readUntilClose()
        let text = String(decoding: bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200"), text)
        XCTAssertFalse(text.lowercased().contains("transfer-encoding"))
        XCTAssertTrue(text.hasSuffix("\r\n\r\naaaaabbbbb"), text)
    }

    func testAFailedProducerEndsTheConnectionWithoutTheLastChunk() throws {
        let client = try server.client()
        try client.send("GET /stream?chunks=1&size=4&fail=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        let text = String(decoding: try client.readUntilClose(), as: UTF8.self)
        XCTAssertTrue(text.hasSuffix("4\r\naaaa\r\n"), "no 0-length last chunk: \(text)")
    }

    func testAClientThatStopsReadingHoldsTheProducerBackAndItsCloseStopsIt() throws {
        let client = try server.client()
        // 64 MiB in 64 KiB chunks, never read: the producer must stall far below that, then fail when we leave.
        try client.send("GET /stream?chunks=1024&size=65536 HTTP/1.1\r\nHost: x\r\n\r\n")
        try eventually("the producer stalls", timeout: .seconds(10)) {
            let before = self.written.withLock { $0 }
            Thread.sleep(forTimeInterval: 0.3)
            return before > 0 && before == self.written.withLock { $0 }
        }
        XCTAssertLessThan(written.withLock { $0 }, 32 << 20, "a reader that does not read must not cost the whole body")
        client.close()
        try eventually("the producer learns the client left", timeout: .seconds(10)) {
            self.producerErrors.withLock { $0 } == ["closed"]
        }
    }
}
