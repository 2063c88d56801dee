import Foundation
import JSON
import Logging
import TestSupport
import XCTest

@testable import PushServer
@testable import PushStore
@testable import SQLiteStore

/// The whole server over real sockets while its store cannot write. The seam is SQLite's `PRAGMA query_only` on the
/// store's live writer connection: from then on every write transaction is refused with SQLITE_READONLY, exactly as
/// on a database file that cannot be written. (A read-only file system cannot be switched on under open files — the
/// kernel refuses the remount — so the real full disk and the read-only start-up are in Tests/sdk/test_store_outage.py.)
final class StoreOutageServerTests: XCTestCase {
    private let intake = IntakeRequests(secret: "store-outage-test-secret-0123456789abcdef")
    private var directory: URL!

    override func setUp() {
        super.setUp()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("outage-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    func testReadOnlyStoreAnswers503WithRetryAfterTurnsReadyFalseAndLogsOnce() async throws {
        var config = intake.serverConfig()
        config.storage.path = directory.appendingPathComponent("data/push.sqlite").path
        config.storage.outageRetryAfterSeconds = 9
        let sink = CapturingLogSink()
        let app = try await Application(
            config: config, logger: Logger(label: "server", level: .info, sink: sink),
            gracePeriod: .seconds(1))
        let port = try app.start()
        let running = Task { await app.run() }

        let registered = try await intake.register(on: port)
        XCTAssertEqual(registered.status, 200, registered.bodyText)
        let deviceID = try XCTUnwrap(registered.jsonObject?["id"]?.stringValue)

        let store = try XCTUnwrap(app.context.store as? SQLitePushStore)
        try await store.write { try $0.execute("PRAGMA query_only = 1") }

        for attempt in 0..<10 {
            let other = intake.registration.replacingOccurrences(of: "abab", with: String(format: "%04x", attempt))
            for response in [
                try await intake.register(on: port, body: other),
                try await intake.publish(on: port),
            ] {
                XCTAssertEqual(response.status, 503, response.bodyText)
                XCTAssertEqual(response.header("Retry-After"), "9")
                XCTAssertEqual(response.jsonObject?["error"]?.stringValue, "Service Unavailable")
                XCTAssertEqual(
                    response.jsonObject?["description"]?.stringValue,
                    "The server cannot store data right now; nothing was stored. Retry later")
            }
        }
        // Reads go on: the device registered before the outage is still served.
        let device = try await rawRequest(port, "GET", "\(intake.registerPath)/\(deviceID)")
        XCTAssertEqual(device.status, 200, device.bodyText)
        // A 503 means not stored: none of the refused publishes exists.
        let recent = try await intake.recentPublishes(on: port)
        XCTAssertEqual(recent.status, 200, recent.bodyText)
        XCTAssertEqual(recent.jsonObject?["publishes"]?.arrayValue?.count, 0, recent.bodyText)

        let ready = try await rawRequest(port, "GET", "/ready")
        XCTAssertEqual(ready.status, 503)
        let store503 = try XCTUnwrap(ready.jsonObject?["checks"]?["store"])
        XCTAssertEqual(store503["writable"], .bool(false))
        XCTAssertEqual(store503["lastFailure"], .string("read_only"))
        let metrics = try await rawRequest(port, "GET", "/metrics").bodyText
        XCTAssertTrue(metrics.contains("\npush_store_writable 0\n"), metrics)
        XCTAssertTrue(metrics.contains(#"push_store_unavailable_total{reason="read_only"}"#), metrics)
        XCTAssertTrue(
            metrics.contains(
                #"route="/device_api/v1/instances/:instance/devices/:platform",method="POST",status="503"} 10"#),
            metrics)
        XCTAssertTrue(
            metrics.contains(
                #"route="/publish_api/v1/instances/:instance/publishes/interests",method="POST",status="503"} 10"#),
            metrics)

        let lines = sink.lines
        XCTAssertEqual(lines.filter { $0.contains("Store cannot write") }.count, 1, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("Store cannot write") && $0.contains("reason=read_only") })
        XCTAssertFalse(
            lines.contains { $0.contains("Handler failed") || $0.contains("Group commit failed") },
            "an outage is not an error line per request: \(lines)")
        XCTAssertFalse(lines.contains { $0.contains("publish=") && $0.contains("Publish accepted") })

        app.shutdown()
        let report = await running.value
        XCTAssertEqual(
            report.stopped,
            [
                "http", "engine", "instances", "invalidations", "webhooks", "beams-bridge",
                "janitor", "store-watchdog", "certificate-expiry",
            ])
        XCTAssertEqual(report.unfinished, [])
        await app.close()
    }
}
