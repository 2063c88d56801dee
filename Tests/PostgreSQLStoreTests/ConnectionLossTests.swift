import Foundation
import PostgreSQLStore
import PushStore
import TestSupport
import XCTest

/// What a node does when its connections break or the server goes away.
final class ConnectionLossTests: PostgreSQLTestCase {
    func testTerminatedSessionIsReplacedAndTheOperationRetried() async throws {
        let store = try await openNode(poolSize: 1)
        let device = try await store.registerDevice(DeviceRegistration(instanceID: instance, token: token(1))).device
        let before = try scalar("SELECT pid FROM pg_stat_activity WHERE application_name = 'push-server'")
        XCTAssertEqual(try cluster.terminateSessions(database: database), 1)
        // The next operation meets the dead connection, reconnects and runs again: the caller sees success.
        let again = try await store.registerDevice(DeviceRegistration(instanceID: instance, token: token(2))).device
        XCTAssertNotEqual(again.id, device.id)
        let after = try scalar("SELECT pid FROM pg_stat_activity WHERE application_name = 'push-server'")
        XCTAssertNotEqual(before, after, "a new session")
        let count = try scalar("SELECT count(*) FROM devices")
        XCTAssertEqual(count, "2", "stored once, not twice")
        try await store.close()
    }

    func testUnreachableServerIsUnavailableAndTheStoreRecoversWhenItReturns() async throws {
        // A cluster of its own: this one is stopped and started.
        let own = try PostgreSQLCluster.start()
        defer { own.stop() }
        let name = try own.createDatabase()
        let health = HealthLog()
        var configuration = PostgreSQLPushStore.Configuration(connectionString: own.connectionString(database: name))
        configuration.poolSize = 2
        configuration.healthEvents = { health.record($0) }
        let store = try await PostgreSQLPushStore.open(configuration)
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "before", kind: .interests, targets: ["a"], payload: Data(),
                createdAt: now))

        try own.stopServer()
        do {
            _ = try await store.enqueuePublish(
                PublishJob(
                    instanceID: instance, publishID: "during", kind: .interests, targets: ["a"], payload: Data(),
                    createdAt: now))
            XCTFail("a publish was accepted while the database was down")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .unreachable)
        }
        do {
            try await store.probeWrite()
            XCTFail("the probe wrote while the database was down")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .unreachable)
        }
        XCTAssertTrue(health.all.contains { if case .failed = $0 { return true } else { return false } })

        try own.startServer()
        try await store.probeWrite()
        XCTAssertEqual(health.all.last, .wrote)
        let during = try await store.publishStatus(instanceID: instance, publishID: "during")
        XCTAssertNil(during, "the refused publish left nothing behind")
        let depth = try await store.queueDepth()
        XCTAssertEqual(depth, 1)
        try await store.close()
    }

    func testOpeningWithoutAServerFailsAsUnavailable() async throws {
        var configuration = PostgreSQLPushStore.Configuration(
            connectionString: "host=127.0.0.1 port=\(try closedPort()) user=postgres dbname=none connect_timeout=2")
        configuration.maxAttempts = 1
        do {
            _ = try await PostgreSQLPushStore.open(configuration)
            XCTFail("opened without a server")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .unreachable)
            XCTAssertTrue(error.detail.contains("127.0.0.1"), error.detail)
        }
    }

    /// A loopback port nothing listens on: the cluster's own port after stopping would race other tests, so a
    /// port taken and released.
    private func closedPort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
