import Foundation
import HTTPServer
import TestSupport
import XCTest

final class LifetimeTests: XCTestCase {
    private func runAndStopServer() throws -> (weak: WeakBox, port: Int) {
        var router = Router()
        router.get("/health") { _ in .text("ok") }
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0, eventLoopCount: 2), router: router)
        let port = try server.start()
        XCTAssertEqual(try RawHTTPClient.request(port: port, "GET", "/health").status, 200)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await server.shutdown()
            done.signal()
        }
        done.wait()
        return (WeakBox(server), port)
    }

    final class WeakBox {
        weak var value: HTTPServer?
        init(_ value: HTTPServer) { self.value = value }
    }

    func testStoppedServerIsReleased() throws {
        let (box, _) = try runAndStopServer()
        // Loop threads drop their references as they exit; give them a moment.
        try eventually("the stopped server is freed") { box.value == nil }
        XCTAssertNil(box.value, "the server (and its loops, router and handlers) must be freed after shutdown")
    }

    func testSecondServerOnTheSamePortFailsInsteadOfSharingIt() async throws {
        var router = Router()
        router.get("/health") { _ in .text("first") }
        let first = HTTPServer(configuration: HTTPServerConfiguration(port: 0, eventLoopCount: 2), router: router)
        let port = try first.start()
        // SO_REUSEPORT alone would let this bind succeed and the kernel split clients between the two servers.
        let second = HTTPServer(configuration: HTTPServerConfiguration(port: port, eventLoopCount: 2), router: router)
        XCTAssertThrowsError(try second.start()) { error in
            XCTAssertTrue("\(error)".contains("in use"), "\(error)")
        }
        XCTAssertEqual(try RawHTTPClient.request(port: port, "GET", "/health").status, 200)
        await first.shutdown()
        // Once the first server is gone the port is free again for a fixed-port server.
        let third = HTTPServer(configuration: HTTPServerConfiguration(port: port, eventLoopCount: 2), router: router)
        XCTAssertEqual(try third.start(), port)
        await third.shutdown()
    }
}
