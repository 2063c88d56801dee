import Foundation
import Logging
import PushStore
import XCTest

@testable import SQLiteStore

/// Collects the store's health events (they arrive on the store's threads).
///
/// `@unchecked Sendable`: `stored` is only touched while holding `lock`.
final class HealthEventRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [StoreHealthEvent] = []

    func record(_ event: StoreHealthEvent) {
        lock.lock()
        stored.append(event)
        lock.unlock()
    }

    var events: [StoreHealthEvent] {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}

extension StoreHealthEvent {
    var failureReason: StoreUnavailableError.Reason? {
        if case .failed(let error) = self { return error.reason }
        return nil
    }
}

/// What the store does when it cannot write, with SQLite's own limits as the seam: `PRAGMA max_page_count`
/// makes it answer SQLITE_FULL exactly as a full disk does, `PRAGMA query_only` makes it answer SQLITE_READONLY.
/// (The real full file system is exercised end to end in Tests/sdk/test_store_outage.py.)
final class StoreAvailabilityTests: StoreTestCase {
    private func openObserved(_ recorder: HealthEventRecorder, logger: Logger = .disabled) async throws
        -> SQLitePushStore
    {
        var configuration = configuration()
        configuration.healthEvents = { recorder.record($0) }
        configuration.logger = logger
        return try await SQLitePushStore.open(configuration)
    }

    /// Caps the database at its current size (`max_page_count`), then registers devices 2, 3, … until one is
    /// refused. - Returns: the refused device's number and the error.
    private func fillUp(_ store: SQLitePushStore) async throws -> (Int, StoreUnavailableError) {
        try await store.write { connection in
            let pages = try connection.first("PRAGMA page_count") { $0.int64(0) } ?? 0
            try connection.execute("PRAGMA max_page_count = \(pages)")
        }
        for n in 2...2000 {
            do {
                _ = try await register(store, n)
            } catch let error as StoreUnavailableError {
                return (n, error)
            }
        }
        struct NeverFilledUp: Error, CustomStringConvertible {
            var description: String { "the database never filled up" }
        }
        throw NeverFilledUp()
    }

    func testFullDatabaseFailsWritesAsDiskFullStoresNothingAndRecovers() async throws {
        let recorder = HealthEventRecorder()
        let store = try await openObserved(recorder)
        _ = try await register(store, 1)
        XCTAssertEqual(recorder.events, [.wrote])
        let (n, error) = try await fillUp(store)
        XCTAssertEqual(error.reason, .diskFull)
        XCTAssertEqual(error.detail, "database or disk is full")
        let missing = try await store.device(instanceID: instance, platform: .apns, token: token(n))
        XCTAssertNil(missing, "a refused registration stored nothing")
        XCTAssertEqual(
            recorder.events.last, .failed(StoreUnavailableError(.diskFull, detail: "database or disk is full")))

        try await store.write { try $0.execute("PRAGMA max_page_count = 1073741823") }
        _ = try await register(store, n)
        XCTAssertEqual(recorder.events.last, .wrote)
        let stored = try await store.device(instanceID: instance, platform: .apns, token: token(n))
        XCTAssertNotNil(stored)
        try await store.close()
    }

    /// At the edge of a full disk a small commit can fit where failed ones left pages allocated; it must not
    /// report the store writable while the file system has no room. Here "no room" is a threshold above any
    /// disk's free space, and `max_page_count` gives the failure.
    func testACommitAfterAFailureOnAFileSystemWithoutRoomDoesNotEndTheOutage() async throws {
        let recorder = HealthEventRecorder()
        var configuration = configuration()
        configuration.healthEvents = { recorder.record($0) }
        configuration.minimumFreeBytesToRecover = .max
        let store = try await SQLitePushStore.open(configuration)
        _ = try await register(store, 1)
        XCTAssertEqual(recorder.events, [.wrote], "without an outage the room is not asked for")
        let (n, _) = try await fillUp(store)
        let eventsAtFailure = recorder.events.count
        XCTAssertEqual(recorder.events.last?.failureReason, .diskFull)

        try await store.write { try $0.execute("PRAGMA max_page_count = 1073741823") }
        _ = try await register(store, n)
        try await store.probeWrite()
        let stored = try await store.device(instanceID: instance, platform: .apns, token: token(n))
        XCTAssertNotNil(stored, "the commit itself succeeded")
        XCTAssertEqual(recorder.events.count, eventsAtFailure, "no .wrote while the file system has no room")
        try await store.close()
    }

    func testReadOnlyDatabaseFailsWritesAndTheProbeButStillReads() async throws {
        let recorder = HealthEventRecorder()
        let store = try await openObserved(recorder)
        _ = try await register(store, 1)
        // Stays on for the connection's life: BEGIN IMMEDIATE itself is refused from now on, as on a read-only file.
        try await store.write { try $0.execute("PRAGMA query_only = 1") }
        do {
            _ = try await register(store, 2)
            XCTFail("a write succeeded on a read-only database")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .readOnly)
        }
        do {
            try await store.probeWrite()
            XCTFail("the probe succeeded on a read-only database")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .readOnly)
        }
        XCTAssertEqual(recorder.events.first, .wrote)
        XCTAssertEqual(recorder.events.dropFirst().map(\.failureReason), [.readOnly, .readOnly])
        let kept = try await store.device(instanceID: instance, platform: .apns, token: token(1))
        XCTAssertNotNil(kept, "reads still work while writes cannot")
        try await store.close()
    }

    func testProbeCommitsWithoutChangingData() async throws {
        let recorder = HealthEventRecorder()
        let store = try await openObserved(recorder)
        try await store.probeWrite()
        XCTAssertEqual(recorder.events, [.wrote], "the probe's commit proves the store writes")
        let version = try await store.read { try Migrator.version(of: $0) }
        XCTAssertEqual(version, Schema.migrations.count)
        try await store.close()
    }

    func testALockHeldPastTheBusyTimeoutIsBusyAndWritesResumeOnceReleased() async throws {
        let recorder = HealthEventRecorder()
        var configuration = configuration()
        configuration.healthEvents = { recorder.record($0) }
        configuration.busyTimeout = .milliseconds(100)
        let store = try await SQLitePushStore.open(configuration)
        // Another process (here: another connection) holds the write lock.
        let other = try SQLiteConnection(path: databasePath)
        try other.execute("BEGIN IMMEDIATE")
        do {
            _ = try await register(store, 1)
            XCTFail("a write succeeded while another connection held the lock")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .busy)
        }
        XCTAssertEqual(recorder.events.map(\.failureReason), [.busy])
        try other.execute("COMMIT")
        try other.close()
        _ = try await register(store, 1)
        XCTAssertEqual(recorder.events.last, .wrote)
        try await store.close()
    }

    func testWritesThatChangeNothingSayNothingAboutHealth() async throws {
        let recorder = HealthEventRecorder()
        let store = try await openObserved(recorder)
        let claimed = try await store.claimJob(workerID: "w", leaseDuration: .seconds(30), now: clock.now)
        XCTAssertNil(claimed)
        _ = try await store.deleteDevice(instanceID: instance, id: "apns-missing")
        XCTAssertEqual(recorder.events, [], "a commit without changes does not prove the disk takes writes")
        try await store.close()
    }

    func testOtherFailuresAreNotUnavailability() {
        let constraint = SQLiteError(code: 19, extendedCode: 2067, message: "UNIQUE constraint failed", sql: nil)
        XCTAssertNil(StoreUnavailableError(sqlite: constraint))
        XCTAssertNil(StoreUnavailableError(sqlite: PushStoreError.notFound))
        let cases: [(Int32, StoreUnavailableError.Reason)] = [
            (13, .diskFull), (10, .ioError), (8, .readOnly), (5, .busy), (6, .busy), (14, .cannotOpen),
        ]
        for (code, reason) in cases {
            let error = SQLiteError(code: code, extendedCode: code | 0x100, message: "m", sql: "INSERT")
            XCTAssertEqual(
                StoreUnavailableError(sqlite: error), StoreUnavailableError(reason, detail: "m"), "code \(code)")
        }
    }

    // MARK: File permissions

    func testNewDirectoryIsPrivateAndDatabaseFilesAre0600() async throws {
        let path = directory.appendingPathComponent("nested/data/push.sqlite").path
        var configuration = SQLitePushStore.Configuration(path: path)
        configuration.clock = { Date() }
        let store = try await SQLitePushStore.open(configuration)
        _ = try await register(store, 1)
        XCTAssertEqual(DatabaseFiles.permissions(directory.appendingPathComponent("nested/data").path), 0o700)
        for suffix in ["", "-wal", "-shm"] {
            XCTAssertEqual(DatabaseFiles.permissions(path + suffix), 0o600, "push.sqlite\(suffix)")
        }
        try await store.close()
    }

    func testExistingDatabaseFilesOpenToOthersAreTightenedWithAWarning() async throws {
        let first = try await openStore()
        _ = try await register(first, 1)
        try await first.close()
        XCTAssertEqual(chmod(databasePath, 0o644), 0)
        let wal = databasePath + "-wal"
        // The WAL may outlive the store (its last connection to close was read-only) and then holds the data.
        if !FileManager.default.fileExists(atPath: wal) {
            XCTAssertTrue(FileManager.default.createFile(atPath: wal, contents: nil))
        }
        XCTAssertEqual(chmod(wal, 0o666), 0)
        XCTAssertEqual(chmod(directory.path, 0o755), 0)

        let sink = CapturingLogSink()
        var configuration = configuration()
        configuration.logger = Logger(label: "test", level: .info, sink: sink)
        let store = try await SQLitePushStore.open(configuration)
        XCTAssertEqual(DatabaseFiles.permissions(databasePath), 0o600)
        XCTAssertEqual(DatabaseFiles.permissions(wal), 0o600)
        XCTAssertEqual(
            DatabaseFiles.permissions(directory.path), 0o755, "an existing directory may be shared: only warned about")
        let lines = sink.lines
        XCTAssertTrue(
            lines.contains { $0.contains("Tightened database file permissions") && $0.contains("was=0644") }, "\(lines)"
        )
        XCTAssertTrue(
            lines.contains { $0.contains("Tightened database file permissions") && $0.contains("was=0666") }, "\(lines)"
        )
        XCTAssertTrue(lines.contains { $0.contains("The database directory is open to other users") }, "\(lines)")
        let device = try await store.device(instanceID: instance, platform: .apns, token: token(1))
        XCTAssertNotNil(device, "tightening keeps the data")
        try await store.close()
    }
}
