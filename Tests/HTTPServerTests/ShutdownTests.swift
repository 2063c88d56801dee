import Foundation
import HTTPServer
import TestSupport
import XCTest

final class ShutdownTests: XCTestCase {
    func testGracefulShutdownFinishesInFlightRequestAndClosesIdleConnections() throws {
        let server = try TestServer()  // grace 3 s
        let idle = try server.client()
        XCTAssertEqual(try idle.request("GET", "/health").status, 200)
        let busy = try server.client()
        try busy.send("GET /slow?ms=600 HTTP/1.1\r\nHost: h\r\n\r\n")
        try eventually("the slow request is in flight") { server.slowRequestsStarted.withLock { $0 } == 1 }

        let start = Date()
        let stopped = DispatchSemaphore(value: 0)
        Task.detached {
            await server.server.shutdown()
            stopped.signal()
        }
        XCTAssertTrue(idle.waitForClose(within: 0.5), "idle keep-alive connection closed at once")
        // Each loop closes its own listener: a connection is refused once all of them have.
        try eventually("no longer accepting") { (try? RawHTTPClient(port: server.port, timeout: 1)) == nil }

        let response = try busy.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.bodyText, "slept 600")
        XCTAssertTrue(response.closesConnection)
        XCTAssertEqual(stopped.wait(timeout: .now() + 3), .success)
        let took = Date().timeIntervalSince(start)
        XCTAssertGreaterThan(took, 0.3, "waited for the in-flight request")
        XCTAssertLessThan(took, 2.5, "did not wait for the whole grace period")
        XCTAssertEqual(server.server.openConnections, 0)
    }

    func testShutdownClosesRequestsStillRunningAfterGracePeriod() throws {
        var limits = TestServer.fastLimits
        limits.shutdownGracePeriod = .milliseconds(300)
        let server = try TestServer(limits: limits)
        let busy = try server.client()
        try busy.send("GET /slow?ms=5000 HTTP/1.1\r\nHost: h\r\n\r\n")
        try eventually("the slow request is in flight") { server.slowRequestsStarted.withLock { $0 } == 1 }
        let start = Date()
        server.stop()
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        XCTAssertTrue(busy.waitForClose(within: 1))
        XCTAssertTrue(busy.buffered.isEmpty)
    }

    func testWaitUntilStoppedReturnsAfterShutdownAndShutdownIsIdempotent() throws {
        let server = try TestServer()
        let waited = DispatchSemaphore(value: 0)
        Task.detached {
            await server.server.waitUntilStopped()
            waited.signal()
        }
        XCTAssertEqual(waited.wait(timeout: .now() + 0.2), .timedOut)
        server.stop()
        XCTAssertEqual(waited.wait(timeout: .now() + 2), .success)
        server.stop()  // second call returns at once
        XCTAssertNil(server.server.port)
    }

    func testServerThatNeverStartedStopsAtOnceAndCannotStartAfterShutdown() throws {
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0, eventLoopCount: 1), router: Router())
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await server.waitUntilStopped()
            await server.shutdown()
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 2), .success)
        XCTAssertThrowsError(try server.start())
    }

    func testSecondStartFails() throws {
        let server = try TestServer(loops: 1)
        defer { server.stop() }
        XCTAssertThrowsError(try server.server.start())
        server.assertHealthy()
    }

    func testStartStopCyclesLeakNoDescriptors() throws {
        func openDescriptors() -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
        }
        // One warm-up cycle: lazily opened process-wide files (e.g. /dev/urandom) are not leaks.
        let warm = try TestServer()
        _ = try warm.client().request("GET", "/health")
        warm.stop()
        let before = openDescriptors()
        for _ in 0..<10 {
            let server = try TestServer()
            let client = try server.client()
            _ = try client.request("GET", "/health")
            _ = try client.request("GET", "/slow?ms=1")
            client.close()
            server.stop()
        }
        XCTAssertEqual(openDescriptors(), before)
    }

    func testStartFailsWithTypedErrorWhenPortIsTaken() throws {
        let first = try TestServer(loops: 1)
        defer { first.stop() }
        // SO_REUSEPORT allows sharing only between sockets that all set it; a plain socket bound first blocks us.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        listen(fd, 1)
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: bound.sin_port))
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: port, eventLoopCount: 2), router: Router())
        XCTAssertThrowsError(try server.start()) { error in
            XCTAssertEqual((error as? HTTPServerError)?.operation, "bind")
            XCTAssertEqual((error as? HTTPServerError)?.code, EADDRINUSE)
        }
        let invalid = HTTPServer(configuration: HTTPServerConfiguration(host: "not-an-ip", port: 0), router: Router())
        XCTAssertThrowsError(try invalid.start())
    }
}
