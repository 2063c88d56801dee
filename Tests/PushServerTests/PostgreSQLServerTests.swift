import Foundation
import JSON
import Logging
@testable import PushServer
import TestSupport
import XCTest

/// The whole server over real sockets on `storage.backend: "postgresql"`, with the database server stopped and
/// started under it: intake answers 503 and stores nothing while it is down, `/ready` says so, and both come back
/// by themselves once it returns (the store watchdog's probe).
final class PostgreSQLServerTests: XCTestCase {
    private let instanceID = "6f0f1a8e-2f5b-4c9e-8a51-0c7f3e2d9b14"
    private let secret = "postgresql-server-test-secret-0123456789"

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

    func testDatabaseOutageAnswers503TurnsReadyFalseAndRecoversWhenTheServerReturns() async throws {
        if !PostgreSQLCluster.isInstalled && !PostgreSQLCluster.isRequired {
            throw XCTSkip("PostgreSQL 15 is not installed (apt-get install postgresql); CI=true makes this a failure")
        }
        // A cluster of its own: this test stops and starts it.
        let cluster = try PostgreSQLCluster.start()
        defer { cluster.stop() }
        let database = try cluster.createDatabase()
        var config = ServerConfig()
        config.listen.port = 0
        config.listen.eventLoops = 1
        config.storage.backend = .postgresql
        config.storage.postgresql = ServerConfig.PostgreSQLStorage(connectionString: cluster.connectionString(database: database))
        config.storage.outageRetryAfterSeconds = 7
        config.instances = [InstanceConfig(id: instanceID, secretKey: secret, apns: nil, webhook: nil)]
        let app = try await Application(config: config, logger: Logger(label: "server", level: .warning, sink: CapturingLogSink()),
                                        gracePeriod: 1)
        let port = try app.start()
        let running = Task { await app.run() }

        let registerPath = "/device_api/v1/instances/\(instanceID)/devices/apns"
        let registration = #"{"token":"\#(String(repeating: "ab", count: 32))","bundleIdentifier":"com.example.app"}"#
        let json = [("Content-Type", "application/json")]
        let publishPath = "/publish_api/v1/instances/\(instanceID)/publishes/interests"
        let publishHeaders = json + [("Authorization", "Bearer \(secret)")]
        let publish = #"{"interests":["news"],"apns":{"aps":{"alert":"hi"}}}"#
        let registered = try await request(port, "POST", registerPath, headers: json, body: registration)
        XCTAssertEqual(registered.status, 200, registered.bodyText)
        let ready = try await request(port, "GET", "/ready")
        XCTAssertEqual(ready.status, 200, ready.bodyText)

        try cluster.stopServer()
        let refusedPublish = try await request(port, "POST", publishPath, headers: publishHeaders, body: publish)
        XCTAssertEqual(refusedPublish.status, 503, refusedPublish.bodyText)
        XCTAssertEqual(refusedPublish.header("Retry-After"), "7")
        XCTAssertEqual(refusedPublish.jsonObject?["error"]?.stringValue, "Service Unavailable")
        let refusedDevice = try await request(
            port, "POST", registerPath, headers: json, body: registration.replacingOccurrences(of: "abab", with: "cdcd"))
        XCTAssertEqual(refusedDevice.status, 503, refusedDevice.bodyText)
        let down = try await request(port, "GET", "/ready")
        XCTAssertEqual(down.status, 503, down.bodyText)
        XCTAssertEqual(down.jsonObject?["checks"]?["store"]?["writable"], .bool(false))
        XCTAssertEqual(down.jsonObject?["checks"]?["store"]?["lastFailure"], .string("unreachable"))

        try cluster.startServer()
        // The watchdog probes once a second while the store is down; give it a bounded while.
        var back = false
        for _ in 0..<100 where !back {
            back = try await request(port, "GET", "/ready").status == 200
            if !back { try await Task.sleep(for: .milliseconds(100)) }
        }
        XCTAssertTrue(back, "/ready recovered after the database returned")
        let accepted = try await request(port, "POST", publishPath, headers: publishHeaders, body: publish)
        XCTAssertEqual(accepted.status, 200, accepted.bodyText)
        let recent = try await request(port, "GET", "/publish_api/v1/instances/\(instanceID)/publishes",
                                       headers: [("Authorization", "Bearer \(secret)")])
        XCTAssertEqual(recent.jsonObject?["publishes"]?.arrayValue?.count, 1, "only the accepted publish exists: \(recent.bodyText)")

        app.shutdown()
        _ = await running.value
        await app.close()
    }
}
