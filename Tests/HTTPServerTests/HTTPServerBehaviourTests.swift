import Foundation
import HTTPServer
import JSON
import TestSupport
import XCTest

final class HTTPServerBehaviourTests: XCTestCase {
    var server: TestServer!

    override func setUpWithError() throws { server = try TestServer() }
    override func tearDown() {
        server?.stop()
        server = nil
    }

    func testServesJSONWithDateContentLengthAndRequestID() throws {
        let response = try server.client().request("GET", "/health")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.bodyText, #"{"status":"ok"}"#)
        XCTAssertEqual(response.header("content-length"), "15")
        XCTAssertEqual(response.header("content-type"), "application/json")
        XCTAssertEqual(response.header("server"), "beams-test")
        XCTAssertNotNil(response.header("date").flatMap { $0.hasSuffix(" GMT") ? $0 : nil })
        XCTAssertFalse(response.header("x-request-id")?.isEmpty ?? true)
    }

    func testATaskHandlerRunsAboveTheDefaultTaskPriority() throws {
        // On Linux each task priority has worker threads of its own: at the default one a handler queued behind
        // the publish engine's jobs (docs/ARCHITECTURE.md "Thread priorities").
        let prioritised = try TestServer { router in
            router.get("/priority") { _ in
                try await Task.sleep(for: .milliseconds(1))
                return .text("\(Task.currentPriority.rawValue)")
            }
        }
        defer { prioritised.stop() }
        let response = try prioritised.client().request("GET", "/priority")
        XCTAssertEqual(response.bodyText, "\(TaskPriority.high.rawValue)", "medium is \(TaskPriority.medium.rawValue)")
    }

    func testKeepAliveReusesTheConnection() throws {
        let client = try server.client()
        for i in 0..<5 {
            let response = try client.request("GET", "/items/\(i)")
            XCTAssertEqual(response.status, 200)
            XCTAssertFalse(response.closesConnection)
            XCTAssertEqual(response.jsonObject?["id"]?.stringValue, "\(i)")
        }
        XCTAssertEqual(server.server.acceptedConnections, 1)
    }

    func testPipelinedResponsesComeBackInOrder() throws {
        let client = try server.client()
        // The slow request comes first: its response must still be first.
        var batch = "GET /slow?ms=150 HTTP/1.1\r\nHost: h\r\n\r\n"
        for i in 0..<20 { batch += "GET /items/\(i) HTTP/1.1\r\nHost: h\r\n\r\n" }
        batch += "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nlast"
        try client.send(batch)
        XCTAssertEqual(try client.readResponse().bodyText, "slept 150")
        for i in 0..<20 {
            XCTAssertEqual(try client.readResponse().jsonObject?["id"]?.stringValue, "\(i)")
        }
        XCTAssertEqual(try client.readResponse().bodyText, "last")
    }

    func testPipelineFloodIsAnsweredInOrderWithBoundedBuffering() throws {
        let client = try server.client(timeout: 20)
        let count = 5_000
        var batch: [UInt8] = []
        for i in 0..<count { batch += Array("GET /items/\(i) HTTP/1.1\r\nHost: h\r\n\r\n".utf8) }
        // Send from another thread: the server stops reading while its answers are not being read, so a
        // single-threaded client would block in send.
        let fd = client.fd
        let bytes = batch
        let sender = Thread {
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes {
                    send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                }
                if n <= 0 { return }
                offset += n
            }
        }
        sender.start()
        for i in 0..<count {
            let response = try client.readResponse()
            XCTAssertEqual(response.jsonObject?["id"]?.stringValue, "\(i)")
            if response.jsonObject?["id"]?.stringValue != "\(i)" { return }
        }
    }

    func testHTTP10ClosesByDefaultAndKeepsAliveWhenAsked() throws {
        let closing = try server.client()
        try closing.send("GET /health HTTP/1.0\r\n\r\n")
        let first = try closing.readResponse()
        XCTAssertEqual(first.status, 200)
        XCTAssertTrue(first.closesConnection)
        XCTAssertTrue(closing.waitForClose(within: 2))

        let keeping = try server.client()
        for _ in 0..<2 {
            try keeping.send("GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let response = try keeping.readResponse()
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.header("connection")?.lowercased(), "keep-alive")
        }
    }

    func testConnectionCloseIsHonoured() throws {
        let client = try server.client()
        let response = try client.request("GET", "/health", headers: [("Connection", "close")])
        XCTAssertTrue(response.closesConnection)
        XCTAssertTrue(client.waitForClose(within: 2))
    }

    func testExpectContinueSendsInterimResponseThenFinalResponse() throws {
        let client = try server.client()
        try client.send("POST /echo HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        let interim = try client.readResponse()
        XCTAssertEqual(interim.status, 100)
        try client.send("hello")
        let final = try client.readResponse()
        XCTAssertEqual(final.status, 200)
        XCTAssertEqual(final.bodyText, "hello")
    }

    func testExpectContinueWithTooLargeBodyGets413WithoutContinue() throws {
        let client = try server.client()
        try client.send("POST /echo HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 10000000\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 413)
        XCTAssertTrue(response.closesConnection)
        XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Content too large")
        XCTAssertTrue(client.waitForClose(within: 3))
    }

    func testExpectContinueOverRouteLimitGetsRouteErrorWithoutContinue() throws {
        let client = try server.client()
        try client.send("POST /publish HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 20000\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 400)
        XCTAssertEqual(response.jsonObject?["description"]?.stringValue, "Request body size is too large (max 10KiB)")
        XCTAssertTrue(client.waitForClose(within: 3))
    }

    func testBodylessRequestToUnknownRouteKeepsConnectionOpen() throws {
        let client = try server.client()
        XCTAssertEqual(try client.request("GET", "/missing").status, 404)
        XCTAssertEqual(try client.request("GET", "/health").status, 200)
        XCTAssertEqual(server.server.acceptedConnections, 1)
    }

    func testExpectContinueOnUnknownRouteGets404WithoutContinue() throws {
        let client = try server.client()
        try client.send("POST /nope HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 404)
    }

    func testChunkedRequestWithTrailersReachesHandler() throws {
        let client = try server.client()
        try client.send(
            "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3;ext=1\r\nabc\r\n4\r\ndefg\r\n0\r\nX-Sum: 7\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.bodyText, "abcdefg")
        XCTAssertEqual(response.header("x-trailer-x-sum"), "7")
    }

    func testHeadReturnsGetHeadersWithoutBody() throws {
        let client = try server.client()
        let head = try client.request("HEAD", "/health")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("content-length"), "15")
        XCTAssertTrue(head.body.isEmpty)
        // The next response on the same connection parses cleanly, so no body bytes were sent.
        XCTAssertEqual(try client.request("GET", "/health").bodyText, #"{"status":"ok"}"#)
    }

    func testUnknownPathGets404JSON() throws {
        let response = try server.client().request("GET", "/missing")
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Not found")
        XCTAssertNotNil(response.jsonObject?["description"]?.stringValue)
    }

    func testWrongMethodGets405WithAllow() throws {
        let response = try server.client().request("DELETE", "/health")
        XCTAssertEqual(response.status, 405)
        XCTAssertEqual(response.header("allow"), "GET, HEAD")
        XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Method not allowed")
    }

    func testRouteSpecificBodyLimitReturnsRouteError() throws {
        let client = try server.client()
        let response = try client.request("POST", "/publish", body: [UInt8](repeating: 65, count: 10 * 1024 + 1))
        XCTAssertEqual(response.status, 400)
        XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Bad request")
        XCTAssertEqual(response.jsonObject?["description"]?.stringValue, "Request body size is too large (max 10KiB)")
        XCTAssertTrue(response.closesConnection)
        let fits = try server.client().request("POST", "/publish", body: [UInt8](repeating: 65, count: 10 * 1024))
        XCTAssertEqual(fits.bodyText, "got 10240")
    }

    func testRouteSpecificBodyLimitAppliesToChunkedBodies() throws {
        let client = try server.client()
        let chunk = String(repeating: "a", count: 4096)
        var text = "POST /publish HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        for _ in 0..<3 { text += "1000\r\n\(chunk)\r\n" }
        text += "0\r\n\r\n"
        try client.send(text)
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 400)
        XCTAssertEqual(response.jsonObject?["description"]?.stringValue, "Request body size is too large (max 10KiB)")
    }

    func testDefaultBodyLimitGives413() throws {
        let response = try server.client().request("POST", "/echo", body: [UInt8](repeating: 1, count: 64 * 1024 + 1))
        XCTAssertEqual(response.status, 413)
    }

    func testHandlerErrorBecomes500WithoutLeakingDetails() throws {
        let response = try server.client().request("GET", "/boom")
        XCTAssertEqual(response.status, 500)
        XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Something went wrong")
        XCTAssertEqual(response.jsonObject?["description"]?.stringValue, "Internal server error")
        XCTAssertFalse(response.bodyText.contains("hunter2"))
        XCTAssertFalse(response.headers.contains { $0.value.contains("hunter2") })
        XCTAssertTrue(server.logs.lines.contains { $0.contains("Handler failed") && $0.contains("hunter2") })
    }

    func testDecodeJSONHelperAnswers400ForInvalidBodies() throws {
        let client = try server.client()
        XCTAssertEqual(try client.request("POST", "/decode", body: Array(#"{"name":"beams"}"#.utf8)).bodyText, "beams")
        let bad = try client.request("POST", "/decode", body: Array(#"{"nom":1}"#.utf8))
        XCTAssertEqual(bad.status, 400)
        XCTAssertEqual(bad.jsonObject?["description"]?.stringValue, "Request body is not valid JSON")
        XCTAssertFalse(bad.bodyText.contains("keyNotFound"))
    }

    func testHTTPResponseErrorRendersItsStatusAndJSON() throws {
        let response = try server.client().request("GET", "/teapot")
        XCTAssertEqual(response.status, 418)
        XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Teapot")
        XCTAssertEqual(response.jsonObject?["description"]?.stringValue, "Short and stout")
    }

    func testErrorResponseHeadersAreSentWithTheJSONError() throws {
        let response = try server.client().request("GET", "/slow-down")
        XCTAssertEqual(response.status, 429)
        XCTAssertEqual(response.header("retry-after"), "7")
        XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Rate Limited")
    }

    func testClientAddressIsThePeerWithoutItsPort() throws {
        let info = try server.client().request("GET", "/info").jsonObject
        XCTAssertEqual(info?["address"]?.stringValue, "127.0.0.1")
        XCTAssertTrue((info?["peer"]?.stringValue)?.hasPrefix("127.0.0.1:") ?? false)
    }

    func testFormDecodedPathReadsPlusAsSpaceAndKeepsEncodedPlusAndSlash() throws {
        let response = try server.client().request("GET", "/form/a+b/c%2Bd%2Fe%20f")
        XCTAssertEqual(response.bodyText, "a b/c+d/e f|c+d/e f|nil")
        XCTAssertEqual(try server.client().request("GET", "/form/x%zz").status, 400, "malformed escapes never route")
    }

    func testZeroBodyLimitAcceptsEmptyBodiesAndRefusesAnyByte() throws {
        XCTAssertEqual(try server.client().request("DELETE", "/no-body").bodyText, "deleted")
        XCTAssertEqual(
            try server.client().request("DELETE", "/no-body", headers: [("Content-Length", "0")]).bodyText,
            "deleted")
        let refused = try server.client().request("DELETE", "/no-body", body: [1])
        XCTAssertEqual(refused.status, 400)
        XCTAssertEqual(refused.jsonObject?["description"]?.stringValue, "No body")
    }

    func testPathParametersQueryAndRestParameterAreDecoded() throws {
        let client = try server.client()
        let item = try client.request("GET", "/items/a%20b;c=d?q=x+y%21")
        XCTAssertEqual(item.jsonObject?["id"]?.stringValue, "a b;c=d")
        XCTAssertEqual(item.jsonObject?["q"]?.stringValue, "x y!")
        XCTAssertEqual(item.jsonObject?["route"]?.stringValue, "/items/:id")
        XCTAssertEqual(try client.request("GET", "/users/alice/x%2Fy").bodyText, "alice/x/y")
    }

    func testIncomingSaneRequestIDIsHonouredAndInsaneOneReplaced() throws {
        let client = try server.client()
        let sane = try client.request("GET", "/info", headers: [("X-Request-ID", "abc-123_x.y")])
        XCTAssertEqual(sane.jsonObject?["requestID"]?.stringValue, "abc-123_x.y")
        XCTAssertEqual(sane.header("x-request-id"), "abc-123_x.y")
        let insane = try client.request("GET", "/info", headers: [("X-Request-ID", "evil\"value with spaces")])
        let generated = insane.jsonObject?["requestID"]?.stringValue
        XCTAssertNotNil(generated)
        XCTAssertNotEqual(generated, "evil\"value with spaces")
        XCTAssertEqual(insane.jsonObject?["tls"]?.stringValue, "no")
        XCTAssertTrue((insane.jsonObject?["peer"]?.stringValue)?.hasPrefix("127.0.0.1:") ?? false)
    }

    func testAccessLogUsesRoutePatternAndObserverSeesEveryRequest() throws {
        let client = try server.client()
        _ = try client.request("GET", "/items/secret-id-42")
        _ = try client.request("GET", "/missing")
        // The observer runs on the loop after the write; give it a moment.
        try eventually("two access records") { server.records.all.count >= 2 }
        let records = server.records.all
        XCTAssertEqual(records.map(\.route), ["/items/:id", "-"])
        XCTAssertEqual(records.map(\.status), [200, 404])
        XCTAssertTrue(records.allSatisfy { $0.bytesIn > 0 && $0.bytesOut > 0 && $0.peer.hasPrefix("127.0.0.1:") })
        let lines = server.logs.lines.filter { $0.contains("Request completed") }
        XCTAssertTrue(lines.contains { $0.contains("route=/items/:id") && $0.contains("status=200") })
        XCTAssertFalse(lines.contains { $0.contains("secret-id-42") })
    }

    func testOpenConnectionsCounterTracksClients() throws {
        let clients = try (0..<3).map { _ in try server.client() }
        for client in clients { _ = try client.request("GET", "/health") }
        XCTAssertEqual(server.server.openConnections, 3)
        for client in clients { client.close() }
        try eventually("no open connections") { server.server.openConnections == 0 }
        XCTAssertEqual(server.server.openConnections, 0)
    }

    func testMaxRequestsPerConnectionClosesAfterTheLimit() throws {
        server.stop()
        var limits = TestServer.fastLimits
        limits.maxRequestsPerConnection = 2
        server = try TestServer(limits: limits)
        let client = try server.client()
        XCTAssertFalse(try client.request("GET", "/health").closesConnection)
        XCTAssertTrue(try client.request("GET", "/health").closesConnection)
        XCTAssertTrue(client.waitForClose(within: 2))
    }

    func testClientClosingBeforeResponseDoesNotKillTheServer() throws {
        for _ in 0..<20 {
            let client = try server.client()
            try client.send("GET /slow?ms=20 HTTP/1.1\r\nHost: h\r\n\r\n")
            client.close()
        }
        try eventually("the server closed the 20 connections") { server.server.openConnections == 0 }
        server.assertHealthy()
    }

    func testHalfClosedClientStillGetsItsResponse() throws {
        let client = try server.client()
        try client.send("GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
        client.shutdownWrite()
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertTrue(client.waitForClose(within: 2))
    }

    func testLargeResponseIsWrittenCompletely() throws {
        let body = (0..<(3 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        server.stop()
        server = try TestServer { router in
            router.get("/big") { _ in HTTPResponse(body: body) }
        }
        let client = try server.client(timeout: 10)
        let response = try client.request("GET", "/big")
        XCTAssertEqual(response.body.count, body.count)
        XCTAssertTrue(response.body == body)
    }

    func testServesIPv6LoopbackAndReportsBracketedPeer() throws {
        let v6 = try TestServer(host: "::1")
        defer { v6.stop() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sg", "--max-time", "5", "http://[::1]:\(v6.port)/info"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertTrue(output.contains(#""peer":"[::1]:"#), output)
        XCTAssertTrue(output.contains(#""address":"::1""#), output)
    }

    func testManyConcurrentKeepAliveClientsAllGetTheirOwnAnswers() throws {
        let clients = 16
        let perClient = 100
        let failures = RecordStoreCounter()
        let group = DispatchGroup()
        let port = server.port
        for c in 0..<clients {
            group.enter()
            // Plain threads, not Dispatch workers: blocking them must not starve the handlers' task pool.
            Thread {
                defer { group.leave() }
                do {
                    let client = try RawHTTPClient(port: port, timeout: 10)
                    for i in 0..<perClient {
                        let id = "\(c)-\(i)"
                        let response = try client.request("GET", "/items/\(id)")
                        if response.jsonObject?["id"]?.stringValue != id { failures.increment() }
                    }
                } catch {
                    failures.increment()
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.value, 0)
        // The counter is bumped right after the last write, which can race the client's read.
        try eventually("every request counted") { server.server.completedRequests >= clients * perClient }
        XCTAssertEqual(server.server.completedRequests, clients * perClient)
    }
}

final class RecordStoreCounter: @unchecked Sendable {
    // @unchecked: `count` is only touched while holding `lock`.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
