import Foundation
import Locking
import PushStore
import TestSupport
import XCTest

@testable import SQLiteStore

/// Large interest sets are written in steps (`SQLitePushStore.interestStep`) so one device's 5,000 names do not hold
/// the single writer for hundreds of milliseconds; the steps must still end exactly as one write would.
final class InterestStepsTests: StoreTestCase {
    private let other = "5b7f0c1e-8d2a-4c3b-9e6f-1a2b3c4d5e6f"

    private func device(_ store: SQLitePushStore, _ n: Int, in instanceID: String? = nil) async throws -> String {
        try await store.registerDevice(
            DeviceRegistration(
                instanceID: instanceID ?? instance, token: token(n), bundleID: "com.example.app", metadata: "{}")
        ).device.id
    }

    private func names(_ store: SQLitePushStore, _ id: String, in instanceID: String? = nil) async throws -> [String] {
        try await store.interests(instanceID: instanceID ?? instance, deviceID: id, limit: 10_000, cursor: nil)?
            .interests ?? []
    }

    /// The trigger-kept counts against the rows they count.
    private func assertCountsMatchRows(_ store: SQLitePushStore, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        let connection = try SQLiteConnection(path: databasePath, readOnly: true)
        defer { try? connection.close() }
        let kept =
            try connection.first(
                "SELECT subscriptions, interests FROM instance_interest_counts WHERE instance_id = ?", [.text(instance)]
            ) { row -> [Int64] in [row.int64(0), row.int64(1)] } ?? [0, 0]
        let subscriptions =
            try connection.first(
                "SELECT count(*) FROM device_interests di JOIN interests i ON i.id = di.interest_id WHERE i.instance_id = ?",
                [.text(instance)]
            ) { $0.int64(0) } ?? -1
        let interests =
            try connection.first("SELECT count(*) FROM interests WHERE instance_id = ?", [.text(instance)]) {
                $0.int64(0)
            } ?? -1
        XCTAssertEqual(kept, [subscriptions, interests], "kept counts against the rows", file: file, line: line)
    }

    func testAnotherInstancesWriteCommitsWhileALargeSetIsStillBeingWritten() async throws {
        let store = try await openStore()
        let other = self.other
        let big = try await device(store, 1, in: other)
        let order = Locked([String]())
        let writeA = Task {
            _ = try await store.setInterests(
                instanceID: other, deviceID: big,
                interests: (0..<5_000).map { "junk-\($0)" }, limits: .unlimited)
            order.withLock { $0.append("A") }
        }
        // The first step is committed (visible to a reader) before B's registration is even queued; written in one
        // transaction, A would be finished by then.
        try await eventually("the first step committed", interval: .milliseconds(1)) {
            try await !self.names(store, big, in: other).isEmpty
        }
        _ = try await device(store, 2)
        order.withLock { $0.append("B") }
        try await writeA.value
        XCTAssertEqual(order.withLock { $0 }, ["B", "A"])
        let written = try await names(store, big, in: other)
        XCTAssertEqual(written.count, 5_000)
        try await store.close()
    }

    func testASetWrittenInStepsEndsExactlyAsAskedWithUnchangedNamesKept() async throws {
        let store = try await openStore()
        let id = try await device(store, 1)
        let old = (0..<3_000).map { "n\($0)" }
        _ = try await store.setInterests(instanceID: instance, deviceID: id, interests: old)
        let before = try await names(store, id)
        XCTAssertEqual(before, old.sorted())
        // 1,000 kept, 2,000 removed, 4,000 added, a duplicate ignored.
        let new = (2_000..<7_000).map { "n\($0)" } + ["n6999"]
        let keptRow = try scalar("SELECT id FROM interests WHERE name = 'n2500'")
        _ = try await store.setInterests(instanceID: instance, deviceID: id, interests: new)
        let after = try await names(store, id)
        XCTAssertEqual(after, Set(new).sorted())
        XCTAssertEqual(try scalar("SELECT id FROM interests WHERE name = 'n2500'"), keptRow)
        XCTAssertEqual(
            try scalar("SELECT count(*) FROM interests"), 5_000, "the removed names went with their follower")
        try assertCountsMatchRows(store)
        XCTAssertEqual(store.interestTurns.activeKeys, 0)
        try await store.close()
    }

    func testConcurrentLargeSetsOnOneDeviceEndAsOneOfThemNotAMix() async throws {
        let store = try await openStore()
        let id = try await device(store, 1)
        let instance = self.instance
        let sets = (0..<4).map { set in (0..<1_000).map { "s\(set)-\($0)" } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for set in sets {
                group.addTask { _ = try await store.setInterests(instanceID: instance, deviceID: id, interests: set) }
            }
            try await group.waitForAll()
        }
        let final = try await names(store, id)
        XCTAssertTrue(sets.contains { $0.sorted() == final }, "a mix of \(Set(final.map { $0.prefix(2) }))")
        try assertCountsMatchRows(store)
        try await store.close()
    }

    func testASetRefusedMidwayByAnotherDevicesWritesChangesNothing() async throws {
        let store = try await openStore()
        let a = try await device(store, 1)
        let b = try await device(store, 2)
        // Each set alone fits; both together do not, and each passes the check made before its first step.
        let limits = InterestLimits(maxSubscriptionsPerInstance: 10_000, maxInterestsPerInstance: 1_500)
        let setA = (0..<1_000).map { "a\($0)" }
        let setB = (0..<1_000).map { "b\($0)" }
        let instance = self.instance
        async let resultA = Self.attempt {
            try await store.setInterests(instanceID: instance, deviceID: a, interests: setA, limits: limits)
        }
        async let resultB = Self.attempt {
            try await store.setInterests(instanceID: instance, deviceID: b, interests: setB, limits: limits)
        }
        let results = await [resultA, resultB]
        let refused = results.filter { if case .failure = $0 { true } else { false } }
        XCTAssertGreaterThanOrEqual(refused.count, 1)
        for result in refused {
            XCTAssertThrowsError(try result.get()) { XCTAssertEqual($0 as? PushStoreError, .interestLimitReached) }
        }
        // Whole or nothing, per device.
        for (id, set, result) in [(a, setA, results[0]), (b, setB, results[1])] {
            let final = try await names(store, id)
            if case .success = result { XCTAssertEqual(final, set.sorted()) } else { XCTAssertEqual(final, []) }
        }
        try assertCountsMatchRows(store)
        try await store.close()
    }

    func testADeviceDeletedBetweenStepsEndsTheWriteWithNotFound() async throws {
        let store = try await openStore()
        let id = try await device(store, 1)
        let instance = self.instance
        let write = Task {
            try await store.setInterests(instanceID: instance, deviceID: id, interests: (0..<5_000).map { "n\($0)" })
        }
        try await eventually("the first step committed", interval: .milliseconds(1)) {
            try await !self.names(store, id).isEmpty
        }
        let deleted = try await store.deleteDevice(instanceID: instance, id: id)
        XCTAssertTrue(deleted)
        let found = try await write.value
        XCTAssertFalse(found)
        XCTAssertEqual(try scalar("SELECT count(*) FROM device_interests"), 0)
        XCTAssertEqual(try scalar("SELECT count(*) FROM interests"), 0)
        try await store.close()
    }

    private static func attempt(_ body: @Sendable () async throws -> Bool) async -> Result<Bool, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    private func scalar(_ sql: String) throws -> Int64? {
        let connection = try SQLiteConnection(path: databasePath, readOnly: true)
        defer { try? connection.close() }
        return try connection.first(sql, []) { $0.int64(0) }
    }
}

/// `KeyedTurns`: one body per key at a time, in arrival order; keys independent.
final class KeyedTurnsTests: XCTestCase {
    func testBodiesOfOneKeyNeverOverlapAndDifferentKeysDoNot() async throws {
        let turns = KeyedTurns<String>()
        let inside = Locked([String: Int]())
        let most = Locked([String: Int]())
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<200 {
                let key = n % 2 == 0 ? "even" : "odd"
                group.addTask {
                    await turns.withTurn(key) {
                        inside.withLock { $0[key, default: 0] += 1 }
                        most.withLock { $0[key] = max($0[key] ?? 0, inside.withLock { $0[key]! }) }
                        await Task.yield()
                        try? await Task.sleep(for: .microseconds(100))
                        inside.withLock { $0[key]! -= 1 }
                    }
                }
            }
        }
        XCTAssertEqual(most.withLock { $0 }, ["even": 1, "odd": 1])
        XCTAssertEqual(turns.activeKeys, 0)
    }

    func testThousandsQueuedBehindOneKeyRunOneByOneInArrivalOrder() async throws {
        // More than the queue's compaction point (1,024 popped): the waiters of a fan-out's first window (1,200
        // requests wanting the provider token) queue here.
        let turns = KeyedTurns<Int>()
        let (holder, release) = try await hold(0, of: turns)
        let order = Locked([Int]())
        let inside = Locked(0)
        var callers: [Task<Void, Never>] = []
        for n in 0..<3_000 {
            callers.append(
                Task {
                    await turns.withTurn(0) {
                        let alone = inside.withLock { count -> Bool in
                            count += 1
                            return count == 1
                        }
                        XCTAssertTrue(alone)
                        order.withLock { $0.append(n) }
                        inside.withLock { $0 -= 1 }
                    }
                })
            // One at a time, so that arrival order is known.
            try await eventually("caller \(n) waits", interval: .microseconds(50)) { turns.waiters(for: 0) == n + 1 }
        }
        release()
        await holder.value
        for caller in callers { await caller.value }
        XCTAssertEqual(order.withLock { $0 }, Array(0..<3_000))
        XCTAssertEqual(turns.activeKeys, 0)
    }

    func testAWaitingKeyDoesNotHoldAnother() async throws {
        let turns = KeyedTurns<Int>()
        let (holder, release) = try await hold(1, of: turns)
        // Key 2 runs at once although key 1 is held.
        let ran = await turns.withTurn(2) { true }
        XCTAssertTrue(ran)
        XCTAssertEqual(turns.activeKeys, 1)
        release()
        await holder.value
        XCTAssertEqual(turns.activeKeys, 0)
    }

    func testAThrowingBodyHandsTheTurnOn() async throws {
        struct Failure: Error {}
        let turns = KeyedTurns<Int>()
        await XCTAssertThrowsErrorAsync { try await turns.withTurn(1) { throw Failure() } }
        let ran = await turns.withTurn(1) { true }
        XCTAssertTrue(ran)
    }

    /// Takes `key`'s turn in a task that holds it until `release` is called; returns once the turn is held.
    private func hold(_ key: Int, of turns: KeyedTurns<Int>) async throws
        -> (holder: Task<Void, Never>, release: () -> Void)
    {
        let held = Locked<CheckedContinuation<Void, Never>?>(nil)
        let holder = Task {
            await turns.withTurn(key) {
                await withCheckedContinuation { continuation in held.withLock { $0 = continuation } }
            }
        }
        try await eventually("key \(key) is held", interval: .milliseconds(1)) { held.withLock { $0 != nil } }
        return (holder, { held.withLock { $0!.resume() } })
    }

    private func XCTAssertThrowsErrorAsync(_ body: () async throws -> Void, line: UInt = #line) async {
        do {
            try await body()
            XCTFail("did not throw", line: line)
        } catch {}
    }
}
