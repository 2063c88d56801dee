import Foundation
import Locking
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
        // A RESTART checkpoint waits for that reader (the 5 s busy timeout) and holds every write back meanwhile:
        // the writer's restarts failed, each after a wait of 40 ms at most, and paused longer after each.
        XCTAssertLessThan(slowest, .seconds(1), "a write waited for the reader")
        XCTAssertGreaterThan(store.walStatistics.failedRestarts, 0, "the writer never tried to start the WAL over")
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

    func testReadsThatOverlapWithoutAGapDoNotLetTheWALPassItsHardLimit() async throws {
        var configuration = configuration()
        // A threshold of 100 pages: the 200 frames between the writer's restart and the hard limit are some 30 of
        // these writes, room for a restart that failed (a read descheduled past the wait) and the pause after it.
        configuration.walAutocheckpointPages = 100
        configuration.readerCount = 3
        let store = try await SQLitePushStore.open(configuration)
        let probe = try SQLiteConnection(path: databasePath, readOnly: true)
        let pageSize = try probe.first("PRAGMA page_size") { $0.int64(0) } ?? 4096
        try probe.close()
        // Three reads at a time on the store's reader threads, each holding its snapshot 2 ms (a read descheduled on
        // a busy machine) and followed at once by the next, as the engine's reads are under sustained intake: some
        // snapshot is always older than the latest commit, so no PASSIVE checkpoint copies every frame and, without
        // the writer's restart, the WAL never starts over (thousands of frames after 1,500 writes).
        let stop = Locked(false)
        let reads = Locked(0)
        var readers: [Task<Void, any Error>] = []
        for _ in 0..<3 {
            readers.append(
                Task {
                    while !stop.withLock({ $0 }) {
                        _ = try await store.read { connection in
                            _ = try connection.first("SELECT count(*) FROM devices") { $0.int64(0) }
                            usleep(2_000)
                        }
                        reads.withLock { $0 += 1 }
                    }
                })
        }
        var slowestWrite: Duration = .zero
        for n in 1...1_500 {
            let start = ContinuousClock.now
            _ = try await register(store, n)
            slowestWrite = max(slowestWrite, ContinuousClock.now - start)
        }
        stop.withLock { $0 = true }
        for reader in readers { try await reader.value }
        let statistics = store.walStatistics
        // The WAL file only grows while the store is open (nothing truncates it; closing deletes it), so its size now
        // is the longest the WAL ever was: at most the hard limit in frames (a 32-byte header, then 24 bytes and a
        // page per frame).
        let walBytes = fileSize(databasePath + "-wal")
        try await store.close()
        let limitFrames = 100 * WALCheckpointer.hardLimitFactor
        let limitBytes = 32 + limitFrames * (24 + Int(pageSize))
        let summary =
            "WAL \(walBytes) bytes (limit \(limitBytes)), \(reads.withLock { $0 }) reads, \(statistics.restarts) "
            + "restarts, \(statistics.failedRestarts) failed (\(statistics.timedOutRestarts) timed out), "
            + "\(statistics.deferredRestarts) deferred, longest copy \(statistics.longestCopy), longest read wait "
            + "\(statistics.longestReadWait), longest hold \(statistics.longestHold), longest restart "
            + "\(statistics.longestRestart), slowest write \(slowestWrite)"
        print("WAL under overlapping reads: \(summary)")
        XCTAssertGreaterThan(reads.withLock { $0 }, 100, "the reads did not overlap the writes: \(summary)")
        XCTAssertLessThanOrEqual(walBytes, limitBytes, "the WAL outgrew its hard limit: \(summary)")
        // Bounded because the writer started it over (PASSIVE checkpoints alone never can under these reads).
        XCTAssertGreaterThan(statistics.restarts, 0, "the writer never started the WAL over: \(summary)")
        // The writer waits for reads at most its cap; the slack is the time a thread of a loaded machine takes to run
        // again, far below the 5 s busy timeout a RESTART without a cap would wait.
        XCTAssertLessThan(
            statistics.longestHold, WALCheckpointer.maxRestartWait + .milliseconds(500),
            "the writer waited past its cap: \(summary)")
    }
}
