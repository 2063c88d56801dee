import Foundation
import JSON
import Logging
import PushServer
import TestSupport
import XCTest

/// The whole server over real sockets on `storage.backend: "postgresql"`, with the database server stopped and
/// started under it: intake answers 503 and stores nothing while it is down, `/ready` says so, and both come back
/// by themselves once it returns (the store watchdog's probe).
final class PostgreSQLServerTests: XCTestCase {
    private let intake = IntakeRequests(secret: "postgresql-server-test-secret-0123456789")

    func testDatabaseOutageAnswers503TurnsReadyFalseAndRecoversWhenTheServerReturns() async throws {
        if !PostgreSQLCluster.isInstalled && !PostgreSQLCluster.isRequired {
            throw XCTSkip("PostgreSQL 15 is not installed (apt-get install postgresql); CI=true makes this a failure")
        }
        // A cluster of its own: this test stops and starts it.
        let cluster = try PostgreSQLCluster.start()
        defer { cluster.stop() }
        let database = try cluster.createDatabase()
        var config = intake.serverConfig()
        config.storage.backend = .postgresql
        config.storage.postgresql = ServerConfig.PostgreSQLStorage(
            connectionString: cluster.connectionString(database: database))
        config.storage.outageRetryAfterSeconds = 7
        let app = try await Application(
            config: config, logger: Logger(label: "server", level: .warning, sink: CapturingLogSink()),
            gracePeriod: .seconds(1))
        let port = try app.start()
        let running = Task { await app.run() }

        let registered = try await intake.register(on: port)
        XCTAssertEqual(registered.status, 200, registered.bodyText)
        let ready = try await rawRequest(port, "GET", "/ready")
        XCTAssertEqual(ready.status, 200, ready.bodyText)

        try cluster.stopServer()
        let refusedPublish = try await intake.publish(on: port)
        XCTAssertEqual(refusedPublish.status, 503, refusedPublish.bodyText)
        XCTAssertEqual(refusedPublish.header("Retry-After"), "7")
        XCTAssertEqual(refusedPublish.jsonObject?["error"]?.stringValue, "Service Unavailable")
        let refusedDevice = try await intake.register(
            on: port, body: intake.registration.replacingOccurrences(of: "abab", with: "cdcd"))
        XCTAssertEqual(refusedDevice.status, 503, refusedDevice.bodyText)
        let down = try await rawRequest(port, "GET", "/ready")
        XCTAssertEqual(down.status, 503, down.bodyText)
        XCTAssertEqual(down.jsonObject?["checks"]?["store"]?["writable"], .bool(false))
        XCTAssertEqual(down.jsonObject?["checks"]?["store"]?["lastFailure"], .string("unreachable"))

        try cluster.startServer()
        // The watchdog probes once a second while the store is down; give it a bounded while.
        try await eventually("/ready recovered after the database returned", interval: .milliseconds(100)) {
            try await rawRequest(port, "GET", "/ready").status == 200
        }
        let accepted = try await intake.publish(on: port)
        XCTAssertEqual(accepted.status, 200, accepted.bodyText)
        let recent = try await intake.recentPublishes(on: port)
        XCTAssertEqual(
            recent.jsonObject?["publishes"]?.arrayValue?.count, 1,
            "only the accepted publish exists: \(recent.bodyText)")

        app.shutdown()
        _ = await running.value
        await app.close()
    }
}
