import Foundation
import HTTPServer
import Lifecycle
import TestSupport
import XCTest

/// `HTTPServer` as a `Lifecycle.Service`: serves while `run()` runs, drains when its task is cancelled.
final class ServiceTests: XCTestCase {
    func testCancellingRunDrainsTheRequestInFlightAndReturns() throws {
        let server = try TestServer()  // started: the port is known before serving
        let busy = try server.client()
        let service: any Service = server.server
        XCTAssertEqual(service.name, "http")
        let returned = DispatchSemaphore(value: 0)
        let task = Task.detached {
            try await service.run()
            returned.signal()
        }
        XCTAssertEqual(try server.client().request("GET", "/health").status, 200)
        try busy.send("GET /slow?ms=400 HTTP/1.1\r\nHost: h\r\n\r\n")
        try eventually("the slow request is in flight") { server.slowRequestsStarted.withLock { $0 } == 1 }
        XCTAssertEqual(returned.wait(timeout: .now() + 0.2), .timedOut, "runs until cancelled")
        task.cancel()
        let response = try busy.readResponse()
        XCTAssertEqual(response.bodyText, "slept 400", "the request in flight finished")
        XCTAssertTrue(response.closesConnection)
        XCTAssertEqual(returned.wait(timeout: .now() + 3), .success)
        XCTAssertThrowsError(try RawHTTPClient(port: server.port, timeout: 1), "no longer accepting")
    }

    func testRunBindsAServerThatWasNotStarted() throws {
        var router = Router()
        router.get("/health", onEventLoop: { _ in .text("ok") })
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0, eventLoopCount: 1), router: router)
        let returned = DispatchSemaphore(value: 0)
        let task = Task.detached {
            try await server.run()
            returned.signal()
        }
        try eventually("the server is listening") { server.port != nil }
        let port = try XCTUnwrap(server.port)
        XCTAssertEqual(try RawHTTPClient(port: port, timeout: 5).request("GET", "/health").bodyText, "ok")
        task.cancel()
        XCTAssertEqual(returned.wait(timeout: .now() + 3), .success)
        XCTAssertNil(server.port)
    }

    func testRunReturnsWhenShutdownStopsTheServer() throws {
        let server = try TestServer()
        let returned = DispatchSemaphore(value: 0)
        Task.detached {
            try await server.server.run()
            returned.signal()
        }
        XCTAssertEqual(returned.wait(timeout: .now() + 0.2), .timedOut)
        server.stop()
        XCTAssertEqual(returned.wait(timeout: .now() + 3), .success)
    }
}
