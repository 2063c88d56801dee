import Foundation
import Locking
import PushStore
import TestSupport
import XCTest

@testable import SQLiteStore

/// Group commit: queued writes share one transaction and resume only after it commits.
final class GroupCommitTests: StoreTestCase {
    func publish(_ id: String) -> PublishJob {
        PublishJob(
            instanceID: instance, publishID: id, kind: .interests, targets: ["news"], payload: Data(id.utf8),
            createdAt: clock.now)
    }

    func testConcurrentEnqueuesAreBatchedIntoGroupTransactions() async throws {
        let store = try await openStore()
        let before = store.writerStatistics
        let ids = try await withThrowingTaskGroup(of: PublishJobID.self) { [store] group in
            for job in (0..<1000).map({ publish("p\($0)") }) {
                group.addTask { try await store.enqueuePublish(job) }
            }
            return try await group.reduce(into: Set<PublishJobID>()) { $0.insert($1) }
        }
        XCTAssertEqual(ids.count, 1000)
        let after = store.writerStatistics
        XCTAssertEqual(after.operations - before.operations, 1000)
        XCTAssertLessThan(after.transactions - before.transactions, 1000)
        try await store.close()
    }

    func testQueuedWritesShareOneCommitAndResumeOnlyAfterIt() async throws {
        // No time budget here: the transaction count below is the count limit's.
        var configuration = configuration()
        configuration.maxBatchDuration = .seconds(60)
        let store = try await SQLitePushStore.open(configuration)
        // Hold the writer so the writes queued next pile up behind it.
        let hold = try await holdWriter(store)
        // Released again on every exit: a wait below that throws must not leave the writer held (a hang).
        defer { hold.gate.signal() }
        let before = store.writerStatistics
        let finished = Counter()
        let jobs = (0..<600).map { publish("p\($0)") }
        let group = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for job in jobs {
                    group.addTask {
                        _ = try await store.enqueuePublish(job)
                        finished.increment()
                    }
                }
                try await group.waitForAll()
            }
        }
        try await eventually("600 writes queued") { store.pendingWrites >= 600 }
        XCTAssertEqual(finished.value, 0, "no caller may resume before its transaction commits")
        try await hold.release()
        try await group.value
        let after = store.writerStatistics
        XCTAssertEqual(after.operations - before.operations, 600)
        // maxBatchSize 512: the blocker's transaction, still open, takes 511 of them; one more transaction takes the
        // other 89 (not 600 transactions).
        XCTAssertEqual(after.transactions - before.transactions, 1)
        XCTAssertEqual(finished.value, 600)
        try await store.close()
    }

    func testQueuedWritesBehindATransactionPastItsTimeBudgetGoIntoTheNextOne() async throws {
        var configuration = configuration()
        configuration.maxBatchDuration = .milliseconds(10)
        let store = try await SQLitePushStore.open(configuration)
        // Hold the writer so the writes queued next pile up behind it.
        let hold = try await holdWriter(store)
        defer { hold.gate.signal() }
        let before = store.writerStatistics
        // 100 writes of 2 ms each: 200 ms in one transaction without the budget (count and cost limits allow it).
        let writes = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        let _: Void = try await store.write { _ in usleep(2_000) }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await eventually("every write queued", interval: .milliseconds(1)) { store.pendingWrites >= 100 }
        try await hold.release()
        try await writes.value
        let after = store.writerStatistics
        XCTAssertEqual(after.operations - before.operations, 100)
        // A slice (at most 16 writes, 32 ms here) is taken while under 10 ms: at least 100 / (5 + 16) transactions.
        XCTAssertGreaterThanOrEqual(after.transactions - before.transactions, 5)
        try await store.close()
    }

    /// A claim waits only for the transaction in progress, not for the engine's queued checkpoints: the claim and the
    /// checkpoints are both the engine's writes, and in the engine's own FIFO one instance's one-device publish waited
    /// for another instance's fan-out checkpoints of 500 results each before it could start (issue 25).
    func testAClaimGoesAheadOfTheEnginesQueuedCheckpoints() async throws {
        let store = try await openStore()
        _ = try await store.enqueuePublish(publish("one-device"))
        let hold = try await holdWriter(store)
        defer { hold.gate.signal() }
        let ran = Counter()
        // Twenty checkpoint-sized engine writes of 50 ms each (tenant nil: the engine's own, as checkpoints are).
        let backlog = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let _: Void = try await store.write(cost: 501) { _ in
                            usleep(50_000)
                            ran.increment()
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await eventually("the checkpoints queued") { store.pendingWrites >= 20 }
        let now = clock.now
        let claim = Task { () -> (ClaimedJob?, Int) in
            let claimed = try await store.claimJob(workerID: "w", leaseDuration: .seconds(30), now: now)
            return (claimed, ran.value)
        }
        try await eventually("the claim queued") { store.pendingWrites >= 21 }
        try await hold.release()
        let (claimed, ranBefore) = try await claim.value
        XCTAssertEqual(claimed?.job.publishID, "one-device")
        // The claim's transaction may take one checkpoint after it (the rest of its 2 ms budget), and the next may
        // start before the claim's caller reads the count: FIFO, all 20 ran first.
        XCTAssertLessThanOrEqual(ranBefore, 2, "checkpoints written before the claim committed")
        try await backlog.value
        XCTAssertEqual(ran.value, 20)
        try await store.close()
    }

    /// A lease renewal behind a backlog of writes (checkpoints, registrations) waits only for the transaction in
    /// progress, not for the backlog: FIFO, it waited for every group before it and the lease could run out.
    func testLeaseRenewalGoesAheadOfQueuedWrites() async throws {
        let store = try await openStore()
        _ = try await store.enqueuePublish(publish("running"))
        let claimed = try await store.claimJob(workerID: "w", leaseDuration: .seconds(30), now: clock.now)
        let job = try XCTUnwrap(claimed).id
        let laterGate = DispatchSemaphore(value: 0)
        let hold = try await holdWriter(store)
        // Released again on every exit: a wait below that throws must not leave the writer held (a hang).
        defer { hold.gate.signal() }
        let jobs = (0..<600).map { publish("p\($0)") }
        let backlog = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for job in jobs {
                    group.addTask { _ = try await store.enqueuePublish(job) }
                }
                try await group.waitForAll()
            }
        }
        try await eventually("600 writes queued") { store.pendingWrites >= 600 }
        let renewed = Flag()
        let now = clock.now
        let renewal = Task {
            try await store.renewLease(job, workerID: "w", leaseDuration: .seconds(30), now: now)
            renewed.set()
        }
        try await eventually("the renewal queued") { store.pendingWrites >= 601 }
        // Queued last, behind the backlog of the same instance, it holds the group it lands in: a renewal still
        // queued behind the backlog would wait for it.
        let tenant = instance
        async let laterBlocker: Void = store.write(tenant: tenant) { _ in laterGate.wait() }
        defer { laterGate.signal() }  // before the task is awaited on an early exit
        try await eventually("the later write queued") { store.pendingWrites >= 602 }
        try await hold.release()
        try await eventually("the renewal committed", timeout: .seconds(20)) { renewed.isSet }
        XCTAssertTrue(renewed.isSet, "the renewal waited behind the queued writes")
        laterGate.signal()
        try await laterBlocker
        try await renewal.value
        try await backlog.value
        try await store.close()
    }

    func testWriterConnectionUsesConfiguredDurability() async throws {
        var configuration = configuration()
        configuration.synchronous = .full
        let store = try await SQLitePushStore.open(configuration)
        let settings = try await store.write { connection in
            [
                try connection.first("PRAGMA synchronous") { $0.int64(0) },
                try connection.first("PRAGMA foreign_keys") { $0.int64(0) },
            ]
        }
        XCTAssertEqual(settings, [2, 1])  // FULL, ON
        let mode = try await store.read { try $0.first("PRAGMA journal_mode") { $0.text(0) } }
        XCTAssertEqual(mode, "wal")
        try await store.close()
    }

}

/// A flag set on the writer thread and polled by the test.
final class Flag: Sendable {
    private let value = Locked(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

final class Counter: Sendable {
    private let count = Locked(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
