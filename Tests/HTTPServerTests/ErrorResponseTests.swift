import Foundation
import HTTPServer
import JSON
import Logging
import TestSupport
import XCTest

/// `HTTPServer(errorResponse:)`: an application turns its own errors into responses (a backend outage → 503 with
/// `Retry-After`) instead of the default 500 with an error line per request.
final class ErrorResponseTests: XCTestCase {
    struct BackendDown: Error {}

    func testMappedErrorsBecomeTheirResponseWithoutAnErrorLineAndOthersStay500() throws {
        var router = Router()
        router.get("/down") { _ in throw BackendDown() }
        router.get("/boom") { _ in throw SecretFailure() }
        let logs = CapturingLogSink()
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoopCount: 1),
            router: router, logger: Logger(label: "http", level: .debug, sink: logs),
            errorResponse: { error in
                guard error is BackendDown else { return nil }
                var response = HTTPResponse(
                    error: HTTPError(
                        .serviceUnavailable, title: "Service Unavailable",
                        detail: "Try again later"))
                response.headers.add("Retry-After", "30")
                return response
            })
        let port = try server.start()
        defer {
            let done = DispatchSemaphore(value: 0)
            Task {
                await server.shutdown()
                done.signal()
            }
            done.wait()
        }

        let client = try RawHTTPClient(port: port)
        defer { client.close() }
        let down = try client.request("GET", "/down")
        XCTAssertEqual(down.status, 503)
        XCTAssertEqual(down.header("Retry-After"), "30")
        XCTAssertEqual(down.jsonObject?["error"]?.stringValue, "Service Unavailable")
        XCTAssertEqual(down.jsonObject?["description"]?.stringValue, "Try again later")
        XCTAssertFalse(down.closesConnection, "a mapped error is an ordinary response on a kept-alive connection")

        let boom = try client.request("GET", "/boom")
        XCTAssertEqual(boom.status, 500)
        XCTAssertEqual(boom.jsonObject?["error"]?.stringValue, "Something went wrong")
        let failures = logs.lines.filter { $0.contains("Handler failed") }
        XCTAssertEqual(failures.count, 1, "only the unmapped error is logged: \(logs.lines)")
        XCTAssertTrue(failures[0].contains("route=/boom"))
    }
}
