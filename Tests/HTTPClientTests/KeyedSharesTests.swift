import HTTPClient
import Locking
import TestSupport
import XCTest

/// The per-destination share of a sender's window (`KeyedShares`, an `AdmissionWindow` per busy key): no sockets.
final class KeyedSharesTests: XCTestCase {
    /// Starts `acquire(key)` in a task and returns once it waits in line (bounded: a waiter that never parks fails).
    private func waiter(
        _ shares: KeyedShares, _ key: String, order: Locked<[Int]>, id: Int,
        scope: RetryScope? = nil
    ) async throws -> Task<Bool, Never> {
        let before = shares.waiting
        let task = Task {
            let got = await shares.acquire(key, cancelledBy: scope)
            if got { order.withLock { $0.append(id) } }
            return got
        }
        try await eventually("waiter \(id) waits in line") { shares.waiting == before + 1 }
        return task
    }

    func testAFullKeyQueuesItsOwnWaitersWhileAnotherKeyStillTakesSlotsAtOnce() async throws {
        let shares = KeyedShares(limit: 2)
        let order = Locked<[Int]>([])
        let first = await shares.acquire("slow")
        let second = await shares.acquire("slow")
        XCTAssertTrue(first && second)
        let third = try await waiter(shares, "slow", order: order, id: 3)
        let healthy = await shares.acquire("healthy")
        XCTAssertTrue(healthy, "another key is not held up by the full one")
        XCTAssertEqual(shares.held("slow"), 2)
        XCTAssertEqual(shares.held("healthy"), 1)
        XCTAssertEqual(shares.waiting, 1)
        shares.close()
        let refused = await third.value
        XCTAssertFalse(refused)
    }

    func testAReleaseHandsTheSlotToTheKeysLongestWaiterAndAnIdleKeyIsForgotten() async throws {
        let shares = KeyedShares(limit: 1)
        let order = Locked<[Int]>([])
        _ = await shares.acquire("a")
        let second = try await waiter(shares, "a", order: order, id: 2)
        let third = try await waiter(shares, "a", order: order, id: 3)
        shares.release("a")
        let gotSecond = await second.value
        XCTAssertTrue(gotSecond)
        XCTAssertEqual(shares.held("a"), 1, "the slot passed on")
        shares.release("a")
        let gotThird = await third.value
        XCTAssertTrue(gotThird)
        XCTAssertEqual(order.withLock { $0 }, [2, 3], "first come, first served")
        shares.release("a")
        XCTAssertEqual(shares.held("a"), 0)
        XCTAssertEqual(shares.busyKeys, 0, "an idle key is forgotten: the shares grow only with busy keys")
    }

    func testANewcomerDoesNotOvertakeWaitersOfTheSameKey() async throws {
        let shares = KeyedShares(limit: 1)
        let order = Locked<[Int]>([])
        _ = await shares.acquire("a")
        let second = try await waiter(shares, "a", order: order, id: 2)
        shares.release("a")
        _ = await second.value
        let newcomer = try await waiter(shares, "a", order: order, id: 3)
        XCTAssertEqual(order.withLock { $0 }, [2], "the slot went to the waiter, not to the newcomer")
        shares.release("a")
        _ = await newcomer.value
        XCTAssertEqual(order.withLock { $0 }, [2, 3])
    }

    func testCloseRefusesWaitersAndNewcomersAndHeldSlotsStayCountedUntilReleased() async throws {
        let shares = KeyedShares(limit: 1)
        let order = Locked<[Int]>([])
        _ = await shares.acquire("a")
        _ = await shares.acquire("b")
        let onA = try await waiter(shares, "a", order: order, id: 2)
        let onB = try await waiter(shares, "b", order: order, id: 4)
        shares.close()
        let gotA = await onA.value
        let gotB = await onB.value
        XCTAssertFalse(gotA || gotB)
        let late = await shares.acquire("c")
        XCTAssertFalse(late, "closed: nothing more is taken")
        XCTAssertEqual(shares.waiting, 0)
        XCTAssertEqual(shares.held("a"), 1)
        shares.release("a")
        shares.release("b")
        XCTAssertEqual(shares.busyKeys, 0)
    }

    func testAWaiterCancelledInLineLeavesItAndTheSlotGoesToTheNext() async throws {
        let shares = KeyedShares(limit: 1)
        let order = Locked<[Int]>([])
        _ = await shares.acquire("a")
        let run = RetryScope()
        let second = try await waiter(shares, "a", order: order, id: 2, scope: run)
        let third = try await waiter(shares, "a", order: order, id: 3)
        run.cancel()
        let gotSecond = await second.value
        XCTAssertFalse(gotSecond)
        shares.release("a")
        let gotThird = await third.value
        XCTAssertTrue(gotThird, "the slot skips the waiter that left")
        XCTAssertEqual(order.withLock { $0 }, [3])
        shares.release("a")
        XCTAssertEqual(shares.busyKeys, 0, "nothing of the cancelled waiter stays")
    }
}

/// `KeyedShares`: a waiter for a destination's share leaves when its run or task is cancelled.
final class KeyedSharesCancellationTests: XCTestCase {
    func testAWaiterForAFullShareLeavesWhenItsRunIsCancelled() async throws {
        let shares = KeyedShares(limit: 1)
        let held = await shares.acquire("push.example")
        XCTAssertTrue(held)
        let run = RetryScope()
        let waiter = Task { await shares.acquire("push.example", cancelledBy: run) }
        try await eventually("the waiter waits in line") { shares.waiting == 1 }
        run.cancel()
        let got = await waiter.value
        XCTAssertFalse(got)
        XCTAssertEqual(shares.waiting, 0)
        XCTAssertEqual(shares.held("push.example"), 1)
        let alreadyCancelled = await shares.acquire("push.example", cancelledBy: run)
        XCTAssertFalse(alreadyCancelled)
        shares.release("push.example")
        XCTAssertEqual(shares.held("push.example"), 0)
    }

    func testAWaiterForAFullShareLeavesWhenItsTaskIsCancelled() async throws {
        let shares = KeyedShares(limit: 1)
        _ = await shares.acquire("push.example")
        let waiter = Task { await shares.acquire("push.example") }
        try await eventually("the waiter waits in line") { shares.waiting == 1 }
        waiter.cancel()
        let got = await waiter.value
        XCTAssertFalse(got)
        XCTAssertEqual(shares.waiting, 0)
    }
}
