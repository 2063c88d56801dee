import Foundation
import Locking
import PushStore
import TestSupport
import XCTest

@testable import SQLiteStore

/// The writer's batches: deficit round robin across tenants, by cost.
final class FairBatchesTests: XCTestCase {
    private struct Write: Equatable {
        let tenant: String
        let n: Int
        let cost: Int
    }

    private func push(_ batches: inout FairBatches<Write>, _ tenant: String, _ count: Int, cost: Int, weight: Int = 1) {
        for n in 0..<count {
            batches.push(Write(tenant: tenant, n: n, cost: cost), tenant: tenant, cost: cost, weight: weight)
        }
    }

    func testACheapWriteQueuedBehindEightDearOnesOfAnotherTenantGoesIntoTheNextBatch() {
        var batches = FairBatches<Write>(quantum: 256)
        push(&batches, "A", 8, cost: 5_001)
        push(&batches, "B", 1, cost: 1)
        let first = batches.takeBatch(maxCount: 512, maxCost: 4_096)
        XCTAssertEqual(first, [Write(tenant: "B", n: 0, cost: 1)])
        // Then A's, one a batch: each is dearer than a batch, so it runs alone, in its order.
        for n in 0..<8 {
            XCTAssertEqual(batches.takeBatch(maxCount: 512, maxCost: 4_096), [Write(tenant: "A", n: n, cost: 5_001)])
        }
        XCTAssertEqual(batches.count, 0)
        XCTAssertEqual(batches.takeBatch(maxCount: 512, maxCost: 4_096), [])
    }

    func testBusyTenantsGetEqualRowsNotEqualOperations() {
        var batches = FairBatches<Write>(quantum: 64)
        push(&batches, "A", 1_000, cost: 50)
        push(&batches, "B", 40_000, cost: 1)
        var rows = ["A": 0, "B": 0]
        for _ in 0..<50 {
            for write in batches.takeBatch(maxCount: 512, maxCost: 1_000) { rows[write.tenant]! += write.cost }
        }
        let a = Double(rows["A"]!)
        let b = Double(rows["B"]!)
        XCTAssertGreaterThan(a + b, 40_000)
        XCTAssertEqual(a / b, 1, accuracy: 0.1, "rows written: \(rows)")
    }

    func testWeightMultipliesATenantsShare() {
        var batches = FairBatches<Write>(quantum: 64)
        push(&batches, "", 10_000, cost: 1, weight: 4)
        push(&batches, "A", 10_000, cost: 1)
        var rows = ["": 0, "A": 0]
        for _ in 0..<20 {
            for write in batches.takeBatch(maxCount: 10_000, maxCost: 500) { rows[write.tenant]! += write.cost }
        }
        XCTAssertEqual(Double(rows[""]!) / Double(rows["A"]!), 4, accuracy: 0.3, "rows written: \(rows)")
    }

    func testEachTenantsWritesKeepTheirOrder() {
        var batches = FairBatches<Write>(quantum: 16)
        push(&batches, "A", 300, cost: 3)
        push(&batches, "B", 300, cost: 7)
        var seen = ["A": -1, "B": -1]
        while batches.count > 0 {
            for write in batches.takeBatch(maxCount: 64, maxCost: 200) {
                XCTAssertEqual(write.n, seen[write.tenant]! + 1)
                seen[write.tenant] = write.n
            }
        }
        XCTAssertEqual(seen, ["A": 299, "B": 299])
    }

    func testUrgentWritesGoFirstAndBatchesRespectTheirBounds() {
        var batches = FairBatches<Write>(quantum: 256)
        push(&batches, "A", 100, cost: 10)
        batches.pushUrgent(Write(tenant: "lease", n: 0, cost: 1))
        let first = batches.takeBatch(maxCount: 512, maxCost: 95)
        XCTAssertEqual(first.first, Write(tenant: "lease", n: 0, cost: 1))
        // The urgent write counts 1; nine of A's fit the rest of 95 rows.
        XCTAssertEqual(first.count, 10)
        XCTAssertEqual(batches.takeBatch(maxCount: 4, maxCost: 10_000).count, 4)
        XCTAssertEqual(batches.count, 100 - 9 - 4)
    }

    func testAWriteOfATenantWithNothingQueuedGoesBeforeTheRestOfABackloggedTenantsTurn() {
        var batches = FairBatches<Write>(quantum: 256)
        push(&batches, "A", 100, cost: 32)
        // The writer's slices (16 writes, 64 rows): A's first quantum as a newcomer, then into its first turn of
        // round robin, which has slices left.
        for _ in 0..<9 {
            XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 64).map(\.tenant), ["A", "A"])
        }
        XCTAssertFalse(batches.tookNewcomer, "A has a backlog: not new")
        push(&batches, "B", 1, cost: 1)
        // Round robin alone would finish A's turn first (three more slices here, a few milliseconds each). B's
        // write goes alone: nothing of A's backlog is added to it, and a transaction that holds it takes none either.
        XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 64).map(\.tenant), ["B"])
        XCTAssertTrue(batches.tookNewcomer)
        push(&batches, "C", 1, cost: 1)
        XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 64, newcomersOnly: true).map(\.tenant), ["C"])
        XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 64, newcomersOnly: true), [])
        XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 64).map(\.tenant), ["A", "A"])
        XCTAssertFalse(batches.tookNewcomer)
    }

    func testTheNextStepOfALargerWriteIsNotANewcomerEvenWithNothingOfItsTenantQueued() {
        var batches = FairBatches<Write>(quantum: 256)
        // A's interest set in steps: each step is queued once the previous one committed, so between two steps
        // nothing of A's is queued. B registers at that moment, then A's next step arrives.
        batches.push(Write(tenant: "A", n: 0, cost: 33), tenant: "A", cost: 33)
        XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 32).map(\.tenant), ["A"])
        push(&batches, "B", 1, cost: 1)
        batches.push(Write(tenant: "A", n: 1, cost: 32), tenant: "A", cost: 32, continuing: true)
        // B's write goes alone, and the transaction that holds it (newcomers only) takes none of A's steps.
        XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 32).map(\.tenant), ["B"])
        XCTAssertTrue(batches.tookNewcomer)
        XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 32, newcomersOnly: true), [])
        // The step is not lost: it is A's turn next.
        XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 32), [Write(tenant: "A", n: 1, cost: 32)])
        XCTAssertFalse(batches.tookNewcomer)
        XCTAssertEqual(batches.count, 0)
        // A later write of A that starts something new (not `continuing`) is a newcomer's again.
        push(&batches, "A", 1, cost: 1)
        XCTAssertEqual(batches.takeBatch(maxCount: 16, maxCost: 32).map(\.tenant), ["A"])
        XCTAssertTrue(batches.tookNewcomer)
    }

    func testANewcomerGetsOneQuantumAheadThenTakesTurnsWithTheBacklog() {
        var batches = FairBatches<Write>(quantum: 10)
        push(&batches, "A", 1_000, cost: 1)
        XCTAssertEqual(batches.takeBatch(maxCount: 10, maxCost: 1_000).count, 10)
        // B arrives with a backlog of its own: only its first 10 rows go ahead of A; after that, turn about.
        push(&batches, "B", 1_000, cost: 1)
        let batch = batches.takeBatch(maxCount: 50, maxCost: 1_000)
        XCTAssertEqual(batch.prefix(10).map(\.tenant), Array(repeating: "B", count: 10))
        let rest = batch.dropFirst(10).map(\.tenant)
        XCTAssertEqual(
            rest.filter { $0 == "A" }.count, rest.filter { $0 == "B" }.count,
            "after the newcomer's quantum: \(rest)")
    }

    func testAnIdleTenantKeepsNoCredit() {
        var batches = FairBatches<Write>(quantum: 100)
        push(&batches, "B", 1, cost: 1)
        XCTAssertEqual(batches.takeBatch(maxCount: 10, maxCost: 1_000).count, 1)
        // B went idle with 99 units left; back with dear writes beside A, it starts from zero like A does.
        push(&batches, "A", 10, cost: 100)
        push(&batches, "B", 10, cost: 100)
        let batch = batches.takeBatch(maxCount: 10, maxCost: 200)
        XCTAssertEqual(batch.map(\.tenant), ["A", "B"])
    }
}

/// The writer thread shares itself between instances.
final class FairWriterTests: StoreTestCase {
    func testARegistrationQueuedBehindEightFiveThousandInterestWritesOfAnotherInstanceCommitsFirst() async throws {
        let store = try await openStore()
        let other = "5b7f0c1e-8d2a-4c3b-9e6f-1a2b3c4d5e6f"
        var devices: [String] = []
        for n in 0..<8 {
            devices.append(
                try await store.registerDevice(
                    DeviceRegistration(
                        instanceID: other, token: token(n), bundleID: "com.example.app", metadata: "{}")
                ).device.id)
        }
        // Hold the writer so the writes queued next pile up behind it.
        let hold = try await holdWriter(store)
        // Released again on every exit: a wait below that throws must not leave the writer held (a hang).
        defer { hold.gate.signal() }
        let order = Locked([String]())
        let targets = devices
        let registration = DeviceRegistration(
            instanceID: instance, token: token(100), bundleID: "com.example.app",
            metadata: "{}")
        let writes = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, device) in targets.enumerated() {
                    let names = (0..<5_000).map { "junk-\(n)-\($0)" }
                    group.addTask {
                        _ = try await store.setInterests(
                            instanceID: other, deviceID: device, interests: names,
                            limits: .unlimited)
                        order.withLock { $0.append("A") }
                    }
                }
                try await eventually("the backlog queued") { store.pendingWrites >= targets.count }
                group.addTask {
                    _ = try await store.registerDevice(registration)
                    order.withLock { $0.append("B") }
                }
                try await group.waitForAll()
            }
        }
        try await eventually("every write queued") { store.pendingWrites >= devices.count + 1 }
        try await hold.release()
        try await writes.value
        let finished = order.withLock { $0 }
        XCTAssertEqual(finished.count, 9)
        // In arrival order the registration would share the eight's transaction and finish with or after them.
        XCTAssertEqual(finished.first, "B", "commit order: \(finished)")
        try await store.close()
    }
}
