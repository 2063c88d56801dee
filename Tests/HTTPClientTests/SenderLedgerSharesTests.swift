import HTTPClient
import Locking
import XCTest

/// A sender's window with a bounded share per destination (`SenderLedger` over `KeyedShares`), without sockets:
/// jobs are admitted and claimed by hand.
final class SenderLedgerSharesTests: XCTestCase {
    private struct Job: Sendable {
        let id: Int
        let key: String
    }

    func testAFullDestinationShareHoldsNoWindowSlotAndOtherDestinationsAreAdmittedAtOnce() async throws {
        let ledger = SenderLedger<Job, Int>(capacity: 4, perKey: 2, state: 0)
        let first = await ledger.admit(key: "slow") { Job(id: $0, key: "slow") }
        let second = await ledger.admit(key: "slow") { Job(id: $0, key: "slow") }
        XCTAssertNotNil(first)
        XCTAssertNotNil(second)
        let admitted = Locked<[String]>([])
        let waiting = Task {
            let job = await ledger.admit(key: "slow") { Job(id: $0, key: "slow") }
            admitted.withLock { $0.append("slow") }
            return job
        }
        // Bounded: a waiter that never parks fails below instead of hanging the test.
        for _ in 0..<1_000_000 where ledger.shares.waiting < 1 { await Task.yield() }
        XCTAssertEqual(ledger.shares.waiting, 1, "the third job to the slow destination waits for its share")
        XCTAssertEqual(ledger.window.inUse, 2, "and holds no window slot while it waits")

        let healthy = await ledger.admit(key: "healthy") { Job(id: $0, key: "healthy") }
        XCTAssertNotNil(healthy, "another destination is admitted at once")
        XCTAssertEqual(ledger.window.inUse, 3)
        XCTAssertTrue(admitted.withLock { $0.isEmpty })

        XCTAssertTrue(ledger.claim(try XCTUnwrap(first).id) { $0 += 1 })
        let third = await waiting.value
        XCTAssertNotNil(third, "a claim frees the share's slot for the waiter")
        XCTAssertEqual(ledger.shares.held("slow"), 2)
        XCTAssertEqual(ledger.window.inUse, 3)
    }

    func testShutdownWakesShareWaitersAndFreesEverySlot() async throws {
        let ledger = SenderLedger<Job, Int>(capacity: 4, perKey: 1, state: 0)
        _ = await ledger.admit(key: "slow") { Job(id: $0, key: "slow") }
        let waiting = Task { await ledger.admit(key: "slow") { Job(id: $0, key: "slow") } }
        for _ in 0..<1_000_000 where ledger.shares.waiting < 1 { await Task.yield() }
        let left = await ledger.shutdown(gracePeriod: .seconds(0), count: { $0 += $1 }) { _ in }
        XCTAssertEqual(left.count, 1)
        let refused = await waiting.value
        XCTAssertNil(refused, "a job waiting for its share is refused at shutdown")
        XCTAssertEqual(ledger.shares.held("slow"), 0)
        XCTAssertEqual(ledger.window.inUse, 0)
    }
}
