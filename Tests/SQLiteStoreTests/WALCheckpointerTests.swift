import Foundation
import PushStore
import TestSupport
import XCTest

@testable import SQLiteStore

/// Checkpoints on their own thread (`Configuration.backgroundCheckpoints`): the WAL still reaches the database
/// file while the store is open, and stays bounded.
final class WALCheckpointerTests: StoreTestCase {
    func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    func testTheWALIsCopiedIntoTheDatabaseWhileTheStoreIsOpenAndStaysBounded() async throws {
        var configuration = configuration()
        configuration.walAutocheckpointPages = 8
        let store = try await SQLitePushStore.open(configuration)
        let before = fileSize(databasePath)
        for n in 1...400 { _ = try await register(store, n) }

        try await eventually("a checkpoint grew the database file") { fileSize(databasePath) > before }
        XCTAssertGreaterThan(fileSize(databasePath), before, "no checkpoint copied the WAL into the database")
        // And the WAL starts over (stays bounded): a checkpoint run from outside reports how many frames it holds.
        let probe = try SQLiteConnection(path: databasePath)
        defer { try? probe.close() }
        var frames = Int64.max
        var n = 400
        // Each round writes one more device, so the checkpointer keeps having something to do.
        try? await eventually("the WAL started over", interval: .milliseconds(20)) {
            n += 1
            _ = try await register(store, n)
            frames = try probe.first("PRAGMA wal_checkpoint(PASSIVE)") { $0.int64(1) } ?? .max
            return frames < 8 * Int64(WALCheckpointer.hardLimitFactor)
        }
        XCTAssertLessThan(frames, 8 * Int64(WALCheckpointer.hardLimitFactor), "the WAL never started over")
        let device = try await store.device(instanceID: instance, platform: .apns, token: token(400))
        XCTAssertNotNil(device)
        try await store.close()
    }

    func testAReaderHoldingASnapshotDoesNotHoldWritesBackWhileTheWALIsPastItsLimit() async throws {
        var configuration = configuration()
        configuration.walAutocheckpointPages = 8
        let store = try await SQLitePushStore.open(configuration)
        // A reader in a long read transaction: the WAL cannot start over while it reads an old snapshot.
        let reader = try SQLiteConnection(path: databasePath, readOnly: true)
        try reader.run("BEGIN")
        _ = try reader.first("SELECT count(*) FROM devices") { $0.int64(0) }
        var slowest: Duration = .zero
        for n in 1...300 {
            let start = ContinuousClock.now
            _ = try await register(store, n)
            slowest = max(slowest, ContinuousClock.now - start)
        }
        // A RESTART checkpoint waits for that reader (the 5 s busy timeout) and holds every write back meanwhile.
        XCTAssertLessThan(slowest, .seconds(1), "a write waited for the reader")
        try reader.run("COMMIT")
        try reader.close()
        // Once the reader is gone the WAL starts over again.
        let probe = try SQLiteConnection(path: databasePath)
        defer { try? probe.close() }
        var frames = Int64.max
        var n = 300
        let deadline = Date().addingTimeInterval(10)
        while frames >= 8 * Int64(WALCheckpointer.hardLimitFactor) && Date() < deadline {
            n += 1
            _ = try await register(store, n)
            frames = try probe.first("PRAGMA wal_checkpoint(PASSIVE)") { $0.int64(1) } ?? .max
        }
        XCTAssertLessThan(frames, 8 * Int64(WALCheckpointer.hardLimitFactor), "the WAL never started over")
        try await store.close()
    }
}
