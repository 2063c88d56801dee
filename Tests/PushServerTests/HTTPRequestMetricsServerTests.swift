import Foundation
import Logging
import PushServer
import TestSupport
import XCTest

/// The request metrics of the whole server over real sockets: with two event loops counting in batches, every
/// request answered is counted once.
final class HTTPRequestMetricsServerTests: XCTestCase {
    private var directory: URL!

    override func setUp() {
        super.setUp()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("reqmetrics-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    func testEveryRequestOnEveryLoopIsCountedOnceAfterAScrape() async throws {
        var config = ServerConfig()
        config.listen.port = 0
        config.listen.eventLoops = 2
        config.storage.path = directory.appendingPathComponent("push.sqlite").path
        let app = try await Application(
            config: config,
            logger: Logger(
                label: "server", level: .warning,
                sink: CapturingLogSink()), gracePeriod: .seconds(1))
        let port = try app.start()
        let running = Task { await app.run() }

        let clients = 8
        let perClient = 50
        let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<clients {
                group.addTask {
                    try await onOwnThread {
                        let client = try RawHTTPClient(port: port, timeout: 10)
                        defer { client.close() }
                        var statuses: [Int] = []
                        for i in 0..<perClient {
                            statuses.append(try client.request(i % 5 == 0 ? "HEAD" : "GET", "/health").status)
                        }
                        statuses.append(try client.request("GET", "/no/such/route").status)
                        return statuses
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        XCTAssertEqual(statuses.filter { $0 == 200 }.count, clients * perClient)
        XCTAssertEqual(statuses.filter { $0 == 404 }.count, clients)

        // A loop hands its batch over at the end of the iteration that wrote the last answer, which may be a few
        // microseconds after the client read it: scrape until the counts arrive, then check they are exact.
        let gets = Double(clients * perClient * 4 / 5)
        let heads = Double(clients * perClient / 5)
        var text = ""
        try? await eventually("every request counted", interval: .milliseconds(20)) {
            text = try await onOwnThread { try RawHTTPClient.request(port: port, "GET", "/metrics").bodyText }
            return text.contains("push_http_requests_total{route=\"-\",method=\"GET\",status=\"404\"} \(clients)\n")
                && text.contains(#"push_http_request_duration_seconds_count{route="/health"} \#(clients * perClient)"#)
        }
        XCTAssertTrue(
            text.contains(
                #"push_http_requests_total{route="/health",method="GET",status="200"} \#(Int(gets))"#
                    + "\n"), text)
        XCTAssertTrue(
            text.contains(
                #"push_http_requests_total{route="/health",method="HEAD",status="200"} \#(Int(heads))"#
                    + "\n"), text)
        XCTAssertTrue(
            text.contains("push_http_requests_total{route=\"-\",method=\"GET\",status=\"404\"} \(clients)\n"),
            text)
        XCTAssertTrue(
            text.contains(
                #"push_http_request_duration_seconds_count{route="/health"} \#(clients * perClient)"#
                    + "\n"), text)
        XCTAssertTrue(
            text.contains(
                #"push_http_request_duration_seconds_bucket{route="/health",le="+Inf"} \#(clients * perClient)"#
                    + "\n"), text)

        app.shutdown()
        _ = await running.value
        await app.close()
    }
}
