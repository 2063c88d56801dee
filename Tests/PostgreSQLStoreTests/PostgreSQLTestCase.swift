import Foundation
import Locking
import PostgreSQLStore
import PushStore
import TestSupport
import XCTest

/// A database of its own per test in the test process's throwaway cluster, dropped afterwards. Skips without
/// PostgreSQL installed, except in CI (`CI=true`).
class PostgreSQLTestCase: XCTestCase {
    var cluster: PostgreSQLCluster!
    var database: String!
    let instance = "0b9a5c1e-3f5a-4c2d-9e1b-7d8f6a5b4c3d"
    let now = Date(millisecondsSince1970: 1_700_000_000_000)

    override func setUpWithError() throws {
        try super.setUpWithError()
        if !PostgreSQLCluster.isInstalled && !PostgreSQLCluster.isRequired {
            throw XCTSkip("PostgreSQL 15 is not installed (apt-get install postgresql); CI=true makes this a failure")
        }
        cluster = try PostgreSQLCluster.shared()
        database = try cluster.createDatabase()
    }

    override func tearDownWithError() throws {
        if let database { try? cluster.dropDatabase(database) }
        try super.tearDownWithError()
    }

    var connectionString: String { cluster.connectionString(database: database) }

    /// A store on the test's database: one "node" (several may share the database); `nodeID`: the node identity it
    /// opens under (`Configuration.nodeID`), waiting at most `nodeIDWait` for a live store under it to close.
    func openNode(
        poolSize: Int = 4, nodeID: String? = nil, nodeIDWait: Duration = .seconds(5),
        health: @escaping @Sendable (StoreHealthEvent) -> Void = { _ in }
    ) async throws -> PostgreSQLPushStore {
        var configuration = PostgreSQLPushStore.Configuration(connectionString: connectionString)
        configuration.poolSize = poolSize
        configuration.nodeID = nodeID
        configuration.nodeIDWait = nodeIDWait
        configuration.healthEvents = health
        let now = self.now
        configuration.clock = { now }
        return try await PostgreSQLPushStore.open(configuration)
    }

    /// A distinct lower-case 64-hex token.
    func token(_ n: Int) -> String {
        let hex = String(n, radix: 16)
        return String(repeating: "b", count: 64 - hex.count) + hex
    }

    /// Asserts that `body` throws `PushStoreError.leaseLost(id)`: the write of a holder that lost its lease.
    func assertLeaseLost(
        _ id: PublishJobID, file: StaticString = #filePath, line: UInt = #line,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail("expected leaseLost", file: file, line: line)
        } catch {
            XCTAssertEqual(error as? PushStoreError, .leaseLost(id), file: file, line: line)
        }
    }

    /// A one-row, one-column query through psql.
    func scalar(_ sql: String) throws -> String {
        try cluster.sql(sql, database: database).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Health events a store reported, for assertions.
final class HealthLog: Sendable {
    private let events = Locked<[StoreHealthEvent]>([])

    func record(_ event: StoreHealthEvent) { events.withLock { $0.append(event) } }

    var all: [StoreHealthEvent] { events.withLock { $0 } }
}
