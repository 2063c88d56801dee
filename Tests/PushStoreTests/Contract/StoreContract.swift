import Foundation
import InMemoryStore
import Locking
import PostgreSQLStore
import PushStore
import SQLiteStore
import TestSupport
import XCTest

/// A backend the contract suite runs on.
enum ContractBackend: String, CaseIterable, Sendable {
    case sqlite
    case inMemory
    case postgresql
}

/// The base of every role's contract: its `test…` methods are written once against `any PushStorage` and run on
/// each backend by the runners in `ContractRunners.swift` (XCTest on Linux finds only methods declared in the
/// `XCTestCase` subclass itself, so inherited tests would silently not run; `ContractCoverageTests` checks that
/// every contract method has a runner on every backend).
///
/// `openStore()` opens the case's own database: a fresh one on the first call, the same data again on later calls
/// (a restarted process), on SQLite from a file in a temporary directory, on PostgreSQL from a database of its own
/// in the test process's throwaway cluster.
class StoreContract {
    let backend: ContractBackend
    let clock = TestClock()
    let instance = "0b9a5c1e-3f5a-4c2d-9e1b-7d8f6a5b4c3d"
    private let directory: URL
    private var memory: InMemoryPushStore?
    /// The case's PostgreSQL database, created on the first `openStore()`.
    private var database: String?

    required init(backend: ContractBackend) {
        self.backend = backend
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-contract-\(UUID().uuidString)")
    }

    fileprivate func removeFiles() {
        try? FileManager.default.removeItem(at: directory)
        if let database { try? PostgreSQLCluster.shared().dropDatabase(database) }
    }

    func openStore() async throws -> any PushStorage {
        switch backend {
        case .sqlite:
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var configuration = SQLitePushStore.Configuration(path: directory.appendingPathComponent("store.sqlite").path)
            let clock = self.clock
            configuration.clock = { clock.now }
            return try await SQLitePushStore.open(configuration)
        case .inMemory:
            let clock = self.clock
            let store = memory?.reopened() ?? InMemoryPushStore(clock: { clock.now })
            memory = store
            return store
        case .postgresql:
            let cluster = try Self.postgreSQLCluster()
            let name = try database ?? cluster.createDatabase()
            database = name
            var configuration = PostgreSQLPushStore.Configuration(connectionString: cluster.connectionString(database: name))
            let clock = self.clock
            configuration.clock = { clock.now }
            return try await PostgreSQLPushStore.open(configuration)
        }
    }

    /// The test process's cluster; skips the case when PostgreSQL is not installed, unless CI requires it.
    static func postgreSQLCluster() throws -> PostgreSQLCluster {
        if !PostgreSQLCluster.isInstalled && !PostgreSQLCluster.isRequired {
            throw XCTSkip("PostgreSQL 15 is not installed (apt-get install postgresql); CI=true makes this a failure")
        }
        return try PostgreSQLCluster.shared()
    }

    /// A distinct lower-case 64-hex token.
    func token(_ n: Int) -> String {
        let hex = String(n, radix: 16)
        return String(repeating: "a", count: 64 - hex.count) + hex
    }

    func register(_ store: any PushStorage, _ n: Int, declared: PushEnvironment? = nil) async throws -> Device {
        try await store.registerDevice(
            DeviceRegistration(
                instanceID: instance, token: token(n), environment: declared ?? .production,
                environmentDeclared: declared != nil, bundleID: "com.example.app", metadata: #"{"sdkVersion":"4.0.0"}"#)
        ).device
    }
}

/// Runs one contract method on `backend` with a fresh database, removed afterwards.
func runContract<Contract: StoreContract>(
    _ backend: ContractBackend, _ test: (Contract) -> () async throws -> Void
) async throws {
    let contract = Contract(backend: backend)
    defer { contract.removeFiles() }
    try await test(contract)()
}

/// Asserts that `body` throws an error equal to `expected`.
func XCTAssertThrowsAsync<E: Error & Equatable>(
    _ expected: E, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        XCTFail("expected \(expected) to be thrown. \(message)", file: file, line: line)
    } catch let error as E {
        XCTAssertEqual(error, expected, message, file: file, line: line)
    } catch {
        XCTFail("expected \(expected), got \(error). \(message)", file: file, line: line)
    }
}
