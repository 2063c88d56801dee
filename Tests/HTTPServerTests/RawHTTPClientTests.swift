import Foundation
import TestSupport
import XCTest

/// The shared test client must parse what real servers send, not only what our server sends.
final class RawHTTPClientTests: XCTestCase {
    /// A socket listening on `127.0.0.1` at a port the kernel picked. - Returns: the socket and its port.
    private func listenOnAnyPort() -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        listen(fd, 1)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A one-shot server: accepts one connection, reads the request head, writes `reply`, closes.
    private func serveOnce(_ reply: String) throws -> Int {
        let (fd, port) = listenOnAnyPort()
        let bytes = Array(reply.utf8)
        Thread {
            let conn = accept(fd, nil, nil)
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = recv(conn, &buffer, buffer.count, 0)
            _ = bytes.withUnsafeBytes { send(conn, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(conn)
            close(fd)
        }.start()
        return port
    }

    func testParsesChunkedResponseWithTrailers() throws {
        let port = try serveOnce(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
                + "5;ext\r\nhello\r\n6\r\n world\r\n0\r\nT: v\r\n\r\n")
        let response = try RawHTTPClient.request(port: port, "GET", "/")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.bodyText, "hello world")
        XCTAssertEqual(response.header("x-a"), "1")
    }

    func testReadsBodyUntilCloseWithoutLength() throws {
        let port = try serveOnce("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
        let response = try RawHTTPClient.request(port: port, "GET", "/")
        XCTAssertEqual(response.version, "HTTP/1.0")
        XCTAssertEqual(response.bodyText, "until the end")
    }

    func testTruncatedBodyIsAnError() throws {
        let port = try serveOnce("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")
        XCTAssertThrowsError(try RawHTTPClient.request(port: port, "GET", "/")) { error in
            XCTAssertEqual(error as? RawHTTPClientError, .closedBeforeResponse)
        }
    }

    func testSilentServerTimesOut() throws {
        let (fd, port) = listenOnAnyPort()
        defer { close(fd) }
        let client = try RawHTTPClient(port: port, timeout: 0.3)
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertThrowsError(try client.readResponse()) { error in
            XCTAssertEqual(error as? RawHTTPClientError, .timedOut)
        }
    }

    func testConnectToClosedPortFails() {
        XCTAssertThrowsError(try RawHTTPClient(port: 1, timeout: 1))
    }
}
