import Foundation
import JSON
import Logging
@testable import PushServer
@testable import PushStore
@testable import SQLiteStore
import TestSupport
import XCTest

/// The whole server over real sockets while its store cannot write. The seam is SQLite's `PRAGMA query_only` on the
/// store's live writer connection: from then on every write transaction is refused with SQLITE_READONLY, exactly as
/// on a database file that cannot be written. (A read-only file system cannot be switched on under open files — the
/// kernel refuses the remount — so the real full disk and the read-only start-up are in Tests/sdk/test_store_outage.py.)
final class StoreOutageServerTests: XCTestCase {
    private let instanceID = "6f0f1a8e-2f5b-4c9e-8a51-0c7f3e2d9b14"
    private let secret = "store-outage-test-secret-0123456789abcdef"
    private var directory: URL!

    override func setUp() {
        super.setUp()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("outage-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    /// One request on a fresh connection, on its own thread: the client blocks, and the server's handlers need the
    /// concurrency pool.
    private func request(_ port: Int, _ method: String, _ target: String, headers: [(String, String)] = [],
                         body: String = "") async throws -> RawHTTPResponse {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    try RawHTTPClient.request(port: port, method, target, headers: headers, body: Array(body.utf8))
                })
            }.start()
        }
    }

    func testReadOnlyStoreAnswers503WithRetryAfterTurnsReadyFalseAndLogsOnce() async throws {
        var config = ServerConfig()
        config.listen.port = 0
        config.listen.eventLoops = 1
        config.storage.path = directory.appendingPathComponent("data/push.sqlite").path
        config.storage.outageRetryAfterSeconds = 9
        config.instances = [InstanceConfig(id: instanceID, secretKey: secret, apns: nil, webhook: nil)]
        let sink = CapturingLogSink()
        let app = try await Application(config: config, logger: Logger(label: "server", level: .info, sink: sink),
                                        gracePeriod: 1)
        let port = try app.start()
        let running = Task { await app.run() }

        let registerPath = "/device_api/v1/instances/\(instanceID)/devices/apns"
        let registration = #"{"token":"\#(String(repeating: "ab", count: 32))","bundleIdentifier":"com.example.app"}"#
        let json = [("Content-Type", "application/json")]
        let registered = try await request(port, "POST", registerPath, headers: json, body: registration)
        XCTAssertEqual(registered.status, 200, registered.bodyText)
        let deviceID = try XCTUnwrap(registered.jsonObject?["id"]?.stringValue)

        let store = try XCTUnwrap(app.context.store as? SQLitePushStore)
        try await store.write { try $0.execute("PRAGMA query_only = 1") }

        let publishPath = "/publish_api/v1/instances/\(instanceID)/publishes/interests"
        let publishHeaders = json + [("Authorization", "Bearer \(secret)")]
        let publish = #"{"interests":["news"],"apns":{"aps":{"alert":"hi"}}}"#
        for attempt in 0..<10 {
            let other = registration.replacingOccurrences(of: "abab", with: String(format: "%04x", attempt))
            for response in [try await request(port, "POST", registerPath, headers: json, body: other),
                             try await request(port, "POST", publishPath, headers: publishHeaders, body: publish)] {
                XCTAssertEqual(response.status, 503, response.bodyText)
                XCTAssertEqual(response.header("Retry-After"), "9")
                XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Service Unavailable")
                XCTAssertEqual(response.jsonObject?["description"]?.stringValue,
                               "The server cannot store data right now; nothing was stored. Retry later")
            }
        }
        // Reads go on: the device registered before the outage is still served.
        let device = try await request(port, "GET", "\(registerPath)/\(deviceID)")
        XCTAssertEqual(device.status, 200, device.bodyText)
        // A 503 means not stored: none of the refused publishes exists.
        let recent = try await request(port, "GET", "/publish_api/v1/instances/\(instanceID)/publishes",
                                       headers: [("Authorization", "Bearer \(secret)")])
        XCTAssertEqual(recent.status, 200, recent.bodyText)
        XCTAssertEqual(recent.jsonObject?["publishes"]?.arrayValue?.count, 0, recent.bodyText)

        let ready = try await request(port, "GET", "/ready")
        XCTAssertEqual(ready.status, 503)
        let store503 = try XCTUnwrap(ready.jsonObject?["checks"]?["store"])
        XCTAssertEqual(store503["writable"], .bool(false))
        XCTAssertEqual(store503["lastFailure"], .string("read_only"))
        let metrics = try await request(port, "GET", "/metrics").bodyText
        XCTAssertTrue(metrics.contains("\npush_store_writable 0\n"), metrics)
        XCTAssertTrue(metrics.contains(#"push_store_unavailable_total{reason="read_only"}"#), metrics)
        XCTAssertTrue(metrics.contains(#"route="/device_api/v1/instances/:instance/devices/:platform",method="POST",status="503"} 10"#), metrics)
        XCTAssertTrue(metrics.contains(#"route="/publish_api/v1/instances/:instance/publishes/interests",method="POST",status="503"} 10"#), metrics)

        let lines = sink.lines
        XCTAssertEqual(lines.filter { $0.contains("Store cannot write") }.count, 1, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("Store cannot write") && $0.contains("reason=read_only") })
        XCTAssertFalse(lines.contains { $0.contains("Handler failed") || $0.contains("Group commit failed") },
                       "an outage is not an error line per request: \(lines)")
        XCTAssertFalse(lines.contains { $0.contains("publish=") && $0.contains("Publish accepted") })

        app.shutdown()
        let report = await running.value
        XCTAssertEqual(report.stopped, ["http", "engine", "webhooks", "janitor", "store-watchdog"])
        XCTAssertEqual(report.unfinished, [])
        await app.close()
    }
}
