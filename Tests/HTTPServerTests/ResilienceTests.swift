import Foundation
import HTTPServer
import TestSupport
import XCTest

/// Liveness under hostile load: idle floods, slowloris, descriptor exhaustion, timeouts, connection caps.
/// The time bounds here are liveness bounds (does it happen at all, roughly when configured), not performance.
final class ResilienceTests: XCTestCase {
    func testThousandIdleConnectionsDoNotStopANewClientBeingServed() throws {
        var limits = TestServer.fastLimits
        limits.headerReadTimeout = .seconds(30)
        // Every test client is 127.0.0.1: without this, the per-address cap (128) would refuse them all; one
        // address's cap is Tests/sdk/test_connection_admission.py's.
        limits.maxConnectionsPerAddress = 0
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < 2500 {
            limit.rlim_cur = min(limit.rlim_max, 4096)
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        var idle: [RawHTTPClient] = []
        for _ in 0..<1000 { idle.append(try server.client()) }
        // Some idle clients sent half a request line: they hold parser state too.
        for client in idle.prefix(200) { try client.send("GET /hea") }
        try eventually("1000 connections accepted") { server.server.openConnections >= 1000 }
        XCTAssertGreaterThanOrEqual(server.server.openConnections, 1000)

        let start = Date()
        let response = try server.client(timeout: 2).request("GET", "/health")
        XCTAssertEqual(response.status, 200)
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        for client in idle { client.close() }
    }

    func testSlowlorisIsClosedAtHeaderTimeoutWhileOthersAreServed() throws {
        let server = try TestServer()  // header timeout 0.8 s
        defer { server.stop() }
        let slow = try server.client()
        let fast = try server.client()
        try slow.send("GET /health HTTP/1.1\r\nHost: h\r\nX-Slow: ")
        let start = Date()
        var closedAfter: Double?
        var served = 0
        while Date().timeIntervalSince(start) < 4 {
            // One byte every 100 ms: activity must not extend the deadline.
            try? slow.send("a")
            XCTAssertEqual(try fast.request("GET", "/health").status, 200)
            served += 1
            if slow.waitForClose(within: 0.1) {
                closedAfter = Date().timeIntervalSince(start)
                break
            }
        }
        guard let closedAfter else { return XCTFail("slowloris connection was never closed") }
        XCTAssertGreaterThan(closedAfter, 0.6)
        XCTAssertLessThan(closedAfter, 2.0)
        XCTAssertTrue(
            slow.buffered.starts(with: Array("HTTP/1.1 408".utf8)), String(decoding: slow.buffered, as: UTF8.self))
        XCTAssertGreaterThan(served, 3)
    }

    func testFirstRequestDeadlineRunsFromAcceptNotFromFirstByte() throws {
        let server = try TestServer()  // header timeout 0.8 s
        defer { server.stop() }
        let client = try server.client()
        let start = Date()
        usleep(500_000)
        try client.send("GET /health HTTP/1.1\r\n")
        XCTAssertTrue(client.waitForClose(within: 3))
        let took = Date().timeIntervalSince(start)
        XCTAssertGreaterThan(took, 0.6)
        XCTAssertLessThan(took, 1.15, "a late first byte must not restart the header clock")
        XCTAssertTrue(client.buffered.starts(with: Array("HTTP/1.1 408".utf8)))
    }

    func testSilentNewConnectionIsClosedAtHeaderTimeout() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.client()
        let start = Date()
        XCTAssertTrue(client.waitForClose(within: 3))
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 0.6)
        XCTAssertTrue(client.buffered.isEmpty)
    }

    func testSlowBodyIsClosedAtBodyTimeout() throws {
        let server = try TestServer()  // body timeout 0.8 s
        defer { server.stop() }
        let client = try server.client()
        try client.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nabc")
        let start = Date()
        XCTAssertTrue(client.waitForClose(within: 3))
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 0.5)
        XCTAssertTrue(client.buffered.starts(with: Array("HTTP/1.1 408".utf8)))
    }

    func testIdleKeepAliveConnectionIsClosedAtIdleTimeout() throws {
        var limits = TestServer.fastLimits
        limits.idleTimeout = .milliseconds(500)
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let client = try server.client()
        XCTAssertEqual(try client.request("GET", "/health").status, 200)
        let start = Date()
        XCTAssertTrue(client.waitForClose(within: 3))
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 0.3)
        XCTAssertTrue(client.buffered.isEmpty, "idle close sends nothing")
    }

    func testConnectionsBeyondMaxAreClosedAndServiceResumes() throws {
        var limits = TestServer.fastLimits
        limits.maxConnections = 4
        limits.headerReadTimeout = .seconds(30)
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let held = try (0..<4).map { _ in try server.client() }
        try eventually("4 connections accepted") { server.server.openConnections >= 4 }
        let refused = try server.client(timeout: 2)
        try? refused.send("GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(refused.waitForClose(within: 2))
        XCTAssertTrue(refused.buffered.isEmpty)
        held[0].close()
        try eventually("the closed connection released") { server.server.openConnections <= 3 }
        server.assertHealthy()
        _ = held
    }

    func testSurvivesDescriptorExhaustionAndServesAgain() throws {
        let server = try TestServer()
        defer { server.stop() }
        server.assertHealthy()
        // The health check's connection is closed by the server when it reads the client's close, which can come
        // after the descriptors below are taken: the descriptor it frees would let the victim be accepted and served.
        try eventually("the health check's connection closed") { server.server.openConnections == 0 }
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var saved = rlimit()
        getrlimit(resource, &saved)
        var lowered = saved
        lowered.rlim_cur = 512
        XCTAssertEqual(setrlimit(resource, &lowered), 0)
        var fillers: [Int32] = []
        while true {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            if fd < 0 { break }
            fillers.append(fd)
        }
        XCTAssertEqual(errno, EMFILE)
        // One free slot for our client socket; the server's accept then hits EMFILE.
        close(fillers.removeLast())
        var sawClose = false
        do {
            let victim = try server.client(timeout: 3)
            try? victim.send("GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
            sawClose = victim.waitForClose(within: 3)
            victim.close()
        } catch {
            XCTFail("connect failed: \(error)")
        }
        for fd in fillers { close(fd) }
        setrlimit(resource, &saved)
        XCTAssertTrue(sawClose, "the pending connection is shed, not left hanging")
        XCTAssertTrue(server.logs.lines.contains { $0.contains("out of file descriptors") })
        // Accepting resumes after a short pause.
        server.assertHealthy()
        server.assertHealthy()
    }

    func testWriteTimeoutClosesAClientThatNeverReads() throws {
        let big = [UInt8](repeating: 7, count: 64 * 1024 * 1024)
        let server = try TestServer { router in router.get("/huge") { _ in HTTPResponse(body: big) } }
        defer { server.stop() }
        let client = try server.client()
        var small: Int32 = 4096
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        try client.send("GET /huge HTTP/1.1\r\nHost: h\r\n\r\n")
        // Seen open first (the write timeout is 2 s), so the wait below cannot pass before the accept.
        try eventually("the connection accepted") { server.server.openConnections == 1 }
        try eventually("the stalled writer closed") { server.server.openConnections == 0 }
        XCTAssertEqual(server.server.openConnections, 0, "the stalled writer was closed at the write timeout")
        server.assertHealthy()
    }

    func testTLSClientHelloOnThePlainPortIsAnswered400AndClosedLongBeforeHeaderTimeout() throws {
        var limits = TestServer.fastLimits
        limits.headerReadTimeout = .seconds(10)
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        // The record up to its first 0x0A (in supported_groups' type), as a first TCP segment can deliver it: a
        // parser that waited for the end of a request line would hold it until the header timeout.
        let firstSegment = Array(Self.clientHello().prefix { $0 != 0x0A })
        XCTAssertGreaterThan(firstSegment.count, 100)
        let client = try server.client(timeout: 12)
        let start = Date()
        try client.send(firstSegment)
        let response = try client.readUntilClose()
        let elapsed = Date().timeIntervalSince(start)
        let text = String(decoding: response, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 400 "), text)
        XCTAssertTrue(text.contains("Connection: close\r\n"), text)
        XCTAssertTrue(text.hasSuffix(#"{"error":"Bad request","description":"Invalid method"}"#), text)
        XCTAssertLessThan(elapsed, 2, "closed at the first byte, not at the 10 s header timeout")
        server.assertHealthy()
    }

    /// A TLS 1.3 ClientHello record as a browser sends it first (RFC 8446 §4.1.2): SNI `localhost`, ALPN
    /// `http/1.1`, an X25519 key share; the random parts are fixed.
    static func clientHello() -> [UInt8] {
        func u16(_ n: Int) -> [UInt8] { [UInt8(n >> 8), UInt8(n & 0xFF)] }
        func vector16(_ bytes: [UInt8]) -> [UInt8] { u16(bytes.count) + bytes }
        func vector8(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count)] + bytes }
        func extensionField(_ type: Int, _ body: [UInt8]) -> [UInt8] { u16(type) + vector16(body) }
        let random = (0..<32).map { UInt8(0x20 + $0 * 3) }
        let session = (0..<32).map { UInt8(0xB0 + ($0 % 16)) }
        let name = Array("localhost".utf8)
        let extensions =
            extensionField(0x0000, vector16([0x00] + vector16(name)))  // server_name
            + extensionField(0x000A, vector16(u16(0x001D) + u16(0x0017)))  // supported_groups
            + extensionField(0x000D, vector16(u16(0x0403) + u16(0x0804) + u16(0x0401)))  // signature_algorithms
            + extensionField(0x0010, vector16(vector8(Array("http/1.1".utf8))))  // ALPN
            + extensionField(0x002B, vector8(u16(0x0304) + u16(0x0303)))  // supported_versions
            + extensionField(0x0033, vector16(u16(0x001D) + vector16((0..<32).map { UInt8(0x41 + $0) })))  // key_share
        let body =
            u16(0x0303) + random + vector8(session) + vector16(u16(0x1301) + u16(0x1302) + u16(0x1303))
            + vector8([0x00]) + vector16(extensions)
        let handshake = [0x01, 0x00] + u16(body.count) + body
        return [0x16, 0x03, 0x01] + u16(handshake.count) + handshake
    }
}
