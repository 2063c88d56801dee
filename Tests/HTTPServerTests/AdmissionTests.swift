import Foundation
import HTTPServer
import JSON
import Locking
import TestSupport
import XCTest

/// A route's admission check runs on the event loop before its handler: a refusal answers at once and the handler
/// never runs; an admitted request reaches the handler; keep-alive and pipelining are unaffected.
final class AdmissionTests: XCTestCase {
    private let handled = Locked(0)
    private let admitted = Locked(0)
    private var server: TestServer!

    override func setUpWithError() throws {
        let handled = self.handled
        let admitted = self.admitted
        server = try TestServer { router in
            router.post(
                "/guarded/:who",
                admission: { request in
                    admitted.withLock { $0 += 1 }
                    if request.parameters["who"] == "abuser" { throw SlowDown() }
                    if request.parameters["who"] == "broken" { throw SecretFailure() }
                }
            ) { request in
                handled.withLock { $0 += 1 }
                return .text("handled \(request.body.count)")
            }
        }
    }

    override func tearDown() {
        server?.stop()
        server = nil
    }

    func testRefusedRequestIsAnsweredWithTheErrorAndNeverReachesTheHandler() throws {
        let response = try server.client().request("POST", "/guarded/abuser", body: Array("0123456789".utf8))
        XCTAssertEqual(response.status, 429)
        XCTAssertEqual(response.header("retry-after"), "7")
        XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Rate Limited")
        XCTAssertEqual(admitted.withLock { $0 }, 1)
        XCTAssertEqual(handled.withLock { $0 }, 0)
        server.assertHealthy()
    }

    func testAdmittedRequestReachesTheHandlerWithItsBody() throws {
        let response = try server.client().request("POST", "/guarded/friend", body: Array("0123456789".utf8))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.bodyText, "handled 10")
        XCTAssertEqual(handled.withLock { $0 }, 1)
    }

    func testPipelinedRefusalsAndAdmissionsKeepTheirOrderOnOneConnection() throws {
        let client = try server.client()
        var batch = ""
        for i in 0..<50 {
            batch +=
                "POST /guarded/\(i % 2 == 0 ? "abuser" : "friend") HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi"
        }
        try client.send(batch)
        for i in 0..<50 {
            let response = try client.readResponse()
            XCTAssertEqual(response.status, i % 2 == 0 ? 429 : 200, "response \(i)")
            XCTAssertFalse(response.closesConnection)
        }
        XCTAssertEqual(handled.withLock { $0 }, 25)
        XCTAssertEqual(server.server.acceptedConnections, 1)
    }

    func testAnErrorThatIsNotAnHTTPResponseIs500WithoutItsDetails() throws {
        let response = try server.client().request("POST", "/guarded/broken", body: Array("x".utf8))
        XCTAssertEqual(response.status, 500)
        XCTAssertFalse(response.bodyText.contains("hunter2"))
        XCTAssertEqual(handled.withLock { $0 }, 0)
        server.assertHealthy()
    }
}
