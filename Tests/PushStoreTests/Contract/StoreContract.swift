import Foundation
import InMemoryStore
import Locking
import PostgreSQLStore
import PushStore
import SQLiteStore
import TestSupport
import Testing

/// A backend the contract suite runs on.
enum ContractBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case inMemory
    case postgresql

    var testDescription: String { rawValue }

    /// The backends each contract test runs on: all of them, except PostgreSQL in the in-process tier
    /// (`PUSH_TEST_TIER=check`, where no child process may start) or when PostgreSQL is not installed and CI does
    /// not require it (`CI=true`); `PUSH_TEST_BACKENDS` (comma-separated names) narrows the list further, as
    /// `make test-postgresql` does.
    static var selected: [ContractBackend] {
        var backends = allCases
        if TestTier.isInProcessOnly || (!PostgreSQLCluster.isInstalled && !PostgreSQLCluster.isRequired) {
            backends.removeAll { $0 == .postgresql }
        }
        if let names = ProcessInfo.processInfo.environment["PUSH_TEST_BACKENDS"], !names.isEmpty {
            let wanted = Set(names.split(separator: ",").map(String.init))
            backends.removeAll { !wanted.contains($0.rawValue) }
        }
        return backends
    }
}

/// The base of every role's contract: each `test…` method is a Swift Testing test written once against
/// `any PushStorage` and parameterised over `ContractBackend.selected`, so a new method runs on every backend by
/// its `@Test` attribute alone (`ContractAttributeTests` checks that none lacks it). Swift Testing makes a fresh
/// instance for each case (one backend) and releases it afterwards, which removes the case's files or database.
///
/// `openStore(_:)` opens the case's own database: a fresh one on the first call, the same data again on later calls
/// (a restarted process), on SQLite from a file in a temporary directory, on PostgreSQL from a database of its own
/// in the test process's throwaway cluster (one per process, TestSupport's `PostgreSQLCluster.shared()`).
class StoreContract {
    let clock = TestClock()
    let instance = "0b9a5c1e-3f5a-4c2d-9e1b-7d8f6a5b4c3d"
    private let directory: URL
    private var memory: InMemoryPushStore?
    /// The case's PostgreSQL database, created on the first `openStore(.postgresql)`.
    private var database: String?

    required init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-contract-\(UUID().uuidString)")
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
        if let database {
            try? PostgreSQLCluster.shared().dropDatabase(database)
            Self.openPostgreSQLCases.update { $0 -= 1 }
        }
    }

    /// PostgreSQL cases with a database now, at most `postgreSQLCasesAtOnce`: Swift Testing starts every case of
    /// the suite at once, and each open store holds a pool of connections (the throwaway cluster allows 200;
    /// unbounded, 101 cases at once were refused with "too many clients already").
    private static let openPostgreSQLCases = WaitableState(0)
    private static let postgreSQLCasesAtOnce = 8

    /// Waits for a PostgreSQL slot; `deinit` gives it back.
    private static func enterPostgreSQLCase() async {
        while true {
            await openPostgreSQLCases.wait { $0 < postgreSQLCasesAtOnce }
            let entered = openPostgreSQLCases.update { open in
                guard open < postgreSQLCasesAtOnce else { return false }
                open += 1
                return true
            }
            if entered { return }
        }
    }

    func openStore(_ backend: ContractBackend) async throws -> any PushStorage {
        switch backend {
        case .sqlite:
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var configuration = SQLitePushStore.Configuration(
                path: directory.appendingPathComponent("store.sqlite").path)
            let clock = self.clock
            configuration.clock = { clock.now }
            return try await SQLitePushStore.open(configuration)
        case .inMemory:
            let clock = self.clock
            let store = memory?.reopened() ?? InMemoryPushStore(clock: { clock.now })
            memory = store
            return store
        case .postgresql:
            let cluster = try PostgreSQLCluster.shared()
            let name: String
            if let database {
                name = database
            } else {
                await Self.enterPostgreSQLCase()
                do {
                    name = try cluster.createDatabase()
                } catch {
                    Self.openPostgreSQLCases.update { $0 -= 1 }
                    throw error
                }
                database = name
            }
            var configuration = PostgreSQLPushStore.Configuration(
                connectionString: cluster.connectionString(database: name))
            let clock = self.clock
            configuration.clock = { clock.now }
            return try await PostgreSQLPushStore.open(configuration)
        }
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

    /// The target ref of `device` (bound to a user) in a users publish to that user: what delivery results name.
    func ref(_ store: any PushStorage, _ device: Device) async throws -> Int64 {
        let job = PublishJob(
            instanceID: instance, publishID: "p", kind: .users, targets: [device.userID!], payload: Data(),
            createdAt: clock.now)
        let page = try await store.targets(for: job, after: 0, limit: 10)
        return try #require(page.targets.first { $0.deviceID == device.id }).ref
    }

    /// Device `n` registered and bound to user `user-<n>`, as stored, with its target ref.
    func registeredWithRef(_ store: any PushStorage, _ n: Int) async throws -> (Device, Int64) {
        let device = try await register(store, n)
        _ = try await store.setUser(
            instanceID: instance, deviceID: device.id, userID: "user-\(n)", maxDevicesPerUser: 100)
        let withUser = try await store.device(instanceID: instance, id: device.id)!
        return (withUser, try await ref(store, withUser))
    }

    /// The push service's 410 "Unregistered" answer for the device `ref`, now: its token is dead since `since`.
    func unregistered(_ ref: Int64, since: Date) -> DeviceResult {
        DeviceResult(
            device: ref, status: 410, reason: "Unregistered", at: clock.now, effect: .unregistered(since: since))
    }
}
