import Foundation
import Locking
import PushStore
import TestSupport
import XCTest

@testable import SQLiteStore

/// A fresh directory per test, removed afterwards.
class StoreTestCase: XCTestCase {
    var directory: URL!
    var clock: TestClock!
    let instance = "0b9a5c1e-3f5a-4c2d-9e1b-7d8f6a5b4c3d"

    var databasePath: String { directory.appendingPathComponent("store.sqlite").path }

    override func setUp() {
        super.setUp()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushstore-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        clock = TestClock()
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    func configuration() -> SQLitePushStore.Configuration {
        var configuration = SQLitePushStore.Configuration(path: databasePath)
        let clock = self.clock!
        configuration.clock = { clock.now }
        return configuration
    }

    func openStore() async throws -> SQLitePushStore {
        try await SQLitePushStore.open(configuration())
    }

    /// Holds the store's writer inside a write until `release()`, so that writes queued meanwhile pile up behind it.
    func holdWriter(_ store: SQLitePushStore) async throws -> WriterHold {
        let gate = DispatchSemaphore(value: 0)
        let entered = Flag()
        let task = Task {
            try await store.write { _ in
                entered.set()
                gate.wait()
            }
        }
        do {
            try await eventually("the writer is held", interval: .milliseconds(1)) { entered.isSet }
        } catch {
            gate.signal()
            throw error
        }
        return WriterHold(gate: gate, task: task)
    }

    /// A distinct lower-case 64-hex token.
    func token(_ n: Int) -> String {
        let hex = String(n, radix: 16)
        return String(repeating: "a", count: 64 - hex.count) + hex
    }

    func register(_ store: SQLitePushStore, _ n: Int, declared: PushEnvironment? = nil) async throws -> Device {
        try await store.registerDevice(
            DeviceRegistration(
                instanceID: instance, token: token(n), environment: declared ?? .production,
                environmentDeclared: declared != nil, bundleID: "com.example.app", metadata: #"{"sdkVersion":"4.0.0"}"#)
        ).device
    }
}

/// Asserts that `body` throws an error equal to `expected`.
func XCTAssertThrowsAsync<E: Error & Equatable>(
    _ expected: E, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
) async {
    do {
        try await body()
        XCTFail("expected \(expected) to be thrown", file: file, line: line)
    } catch let error as E {
        XCTAssertEqual(error, expected, file: file, line: line)
    } catch {
        XCTFail("expected \(expected), got \(error)", file: file, line: line)
    }
}

/// A write holding the store's writer (`StoreTestCase.holdWriter`).
struct WriterHold {
    let gate: DispatchSemaphore
    let task: Task<Void, any Error>

    /// Lets the held write finish and waits for its commit. (A test also `defer`s `gate.signal()`, so that a wait
    /// that throws before this does not leave the writer held: a hang.)
    func release() async throws {
        gate.signal()
        try await task.value
    }
}
