import Foundation
import HTTPServer
import JSON
import Locking
import Logging
import TestSupport
import XCTest

struct SecretFailure: Error, CustomStringConvertible {
    var description: String { "database password is hunter2" }
}

/// An error that asks for extra response header fields.
struct SlowDown: HTTPResponseError {
    var status: HTTPStatus { HTTPStatus(429) }
    var title: String { "Rate Limited" }
    var description: String { "Too many requests" }
    var responseHeaders: HTTPHeaders { ["Retry-After": "7"] }
}

/// A server on 127.0.0.1:0 with the routes the tests use, stopped with `stop()`.
final class TestServer: Sendable {
    let server: HTTPServer
    let port: Int
    let logs = CapturingLogSink()
    let records = RecordStore()
    /// Requests to `/slow` whose handler has started: a test waits for it (`eventually`) before it acts on a
    /// request in flight.
    let slowRequestsStarted = Locked(0)

    init(
        limits: HTTPLimits = TestServer.fastLimits, loops: Int = 2, tls: TLSConfiguration? = nil,
        host: String = "127.0.0.1",
        extraRoutes: (inout Router) -> Void = { _ in }
    ) throws {
        var router = Router()
        router.get("/health") { _ in .json(raw: Array(#"{"status":"ok"}"#.utf8)) }
        router.post("/echo") { request in
            var response = HTTPResponse(status: .ok, body: request.body)
            response.headers.add("Content-Type", "application/octet-stream")
            for trailer in request.trailers { response.headers.add("X-Trailer-" + trailer.name, trailer.value) }
            return response
        }
        router.post(
            "/publish",
            bodyLimit: BodyLimit(
                maxBytes: 10 * 1024,
                error: HTTPError(
                    .badRequest, title: "Bad request", detail: "Request body size is too large (max 10KiB)"))
        ) { request in .text("got \(request.body.count)") }
        router.get("/items/:id") { request in
            .json(
                .object([
                    "id": .string(request.parameters["id"] ?? ""), "q": .string(request.queryValue("q") ?? ""),
                    "route": .string(request.routePattern),
                ]))
        }
        router.get("/users/*userId") { request in .text(request.parameters["userId"] ?? "") }
        let slowRequestsStarted = self.slowRequestsStarted
        router.get("/slow") { request in
            slowRequestsStarted.withLock { $0 += 1 }
            let ms = Int(request.queryValue("ms") ?? "") ?? 200
            try await Task.sleep(for: .milliseconds(ms))
            return .text("slept \(ms)")
        }
        router.get("/boom") { _ in throw SecretFailure() }
        router.post("/decode") { request in
            let invalid = HTTPError.badRequest("Request body is not valid JSON")
            guard let name = try request.jsonBody(orThrow: invalid)["name"]?.stringValue else { throw invalid }
            return .text(name)
        }
        router.get("/teapot") { _ in throw HTTPError(HTTPStatus(418), title: "Teapot", detail: "Short and stout") }
        router.get("/info") { request in
            .json(
                .object([
                    "requestID": .string(request.requestID), "peer": .string(request.peer),
                    "tls": .string(request.isTLS ? "yes" : "no"), "route": .string(request.routePattern),
                    "path": .string(request.path), "address": .string(request.clientAddress),
                ]))
        }
        router.get("/slow-down") { _ in throw SlowDown() }
        router.get("/form/*rest") { request in
            .text((1...3).map { request.formDecodedPath(fromSegment: $0) ?? "nil" }.joined(separator: "|"))
        }
        router.delete("/no-body", bodyLimit: BodyLimit(maxBytes: 0, error: HTTPError(.badRequest, detail: "No body"))) {
            _ in .text("deleted")
        }
        extraRoutes(&router)
        var configuration = HTTPServerConfiguration(
            host: host, port: 0, tls: tls, eventLoopCount: loops,
            limits: limits)
        configuration.serverName = "beams-test"
        let records = self.records
        server = HTTPServer(
            configuration: configuration, router: router,
            logger: Logger(label: "http", level: .debug, sink: logs),
            onRequestsCompleted: { batch in records.append(contentsOf: batch) })
        port = try server.start()
    }

    /// Short timeouts so timeout tests run quickly; body limit 64 KiB.
    static var fastLimits: HTTPLimits {
        var limits = HTTPLimits()
        limits.headerReadTimeout = .milliseconds(800)
        limits.bodyReadTimeout = .milliseconds(800)
        limits.idleTimeout = .seconds(5)
        limits.writeTimeout = .seconds(2)
        limits.tlsHandshakeTimeout = .milliseconds(600)
        limits.shutdownGracePeriod = .seconds(3)
        limits.maxBodyBytes = 64 * 1024
        limits.maxRequestLineBytes = 1024
        limits.maxHeaderBytes = 4096
        limits.maxHeaderCount = 30
        return limits
    }

    func client(timeout: Double = 5) throws -> RawHTTPClient { try RawHTTPClient(port: port, timeout: timeout) }

    /// Blocks the calling (non-pool) thread until the server stopped.
    func stop() {
        let done = DispatchSemaphore(value: 0)
        let server = self.server
        Task.detached {
            await server.shutdown()
            done.signal()
        }
        done.wait()
    }

    /// Asserts the server still answers a plain request on a fresh connection.
    func assertHealthy(file: StaticString = #filePath, line: UInt = #line) {
        do {
            let response = try client().request("GET", "/health")
            XCTAssertEqual(response.status, 200, file: file, line: line)
            XCTAssertEqual(response.bodyText, #"{"status":"ok"}"#, file: file, line: line)
        } catch {
            XCTFail("server not healthy: \(error)", file: file, line: line)
        }
    }
}

/// Access-log records collected by the observer hook.
final class RecordStore: @unchecked Sendable {
    // @unchecked: `storage` is only touched while holding `lock` (NSLock, which ThreadSanitizer understands).
    private let lock = NSLock()
    private var storage: [AccessLogRecord] = []
    func append(contentsOf batch: [AccessLogRecord]) { lock.withLock { storage.append(contentsOf: batch) } }
    var all: [AccessLogRecord] { lock.withLock { storage } }
}
