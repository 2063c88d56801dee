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
        let deadline = Date().addingTimeInterval(5)
        while server.server.openConnections < 1000 && Date() < deadline { usleep(10_000) }
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
        XCTAssertTrue(slow.buffered.starts(with: Array("HTTP/1.1 408".utf8)), String(decoding: slow.buffered, as: UTF8.self))
        XCTAssertGreaterThan(served, 3)
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
        let deadline = Date().addingTimeInterval(3)
        while server.server.openConnections < 4 && Date() < deadline { usleep(10_000) }
        let refused = try server.client(timeout: 2)
        try? refused.send("GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(refused.waitForClose(within: 2))
        XCTAssertTrue(refused.buffered.isEmpty)
        held[0].close()
        let again = Date().addingTimeInterval(3)
        while server.server.openConnections > 3 && Date() < again { usleep(10_000) }
        server.assertHealthy()
        _ = held
    }

    func testSurvivesDescriptorExhaustionAndServesAgain() throws {
        let server = try TestServer()
        defer { server.stop() }
        server.assertHealthy()
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
        let deadline = Date().addingTimeInterval(6)
        usleep(200_000)
        while server.server.openConnections > 0 && Date() < deadline { usleep(20_000) }
        XCTAssertEqual(server.server.openConnections, 0, "the stalled writer was closed at the write timeout")
        server.assertHealthy()
    }
}
