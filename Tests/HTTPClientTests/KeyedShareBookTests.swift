import HTTPClient
import XCTest

/// The per-destination share of a sender's window, as a state machine: no locks, no sockets.
final class KeyedShareBookTests: XCTestCase {
    func testAFullKeyQueuesItsOwnWaitersWhileAnotherKeyStillTakesSlotsAtOnce() {
        var book = KeyedShareBook<Int>(limit: 2)
        XCTAssertTrue(book.acquire("slow", waiter: 1))
        XCTAssertTrue(book.acquire("slow", waiter: 2))
        XCTAssertFalse(book.acquire("slow", waiter: 3), "the slow key's share is full")
        XCTAssertFalse(book.acquire("slow", waiter: 4))
        XCTAssertTrue(book.acquire("healthy", waiter: 5), "another key is not held up by the full one")
        XCTAssertEqual(book.held("slow"), 2)
        XCTAssertEqual(book.waiting("slow"), 2)
        XCTAssertEqual(book.waitingAll, 2)
        XCTAssertEqual(book.held("healthy"), 1)
    }

    func testAReleaseHandsTheSlotToTheKeysLongestWaiterWithoutFreeingIt() {
        var book = KeyedShareBook<Int>(limit: 1)
        XCTAssertTrue(book.acquire("a", waiter: 1))
        XCTAssertFalse(book.acquire("a", waiter: 2))
        XCTAssertFalse(book.acquire("a", waiter: 3))
        XCTAssertEqual(book.release("a"), 2)
        XCTAssertEqual(book.held("a"), 1, "the slot passed on")
        XCTAssertEqual(book.release("a"), 3)
        XCTAssertNil(book.release("a"))
        XCTAssertEqual(book.held("a"), 0)
        XCTAssertEqual(book.busyKeys, 0, "an idle key is forgotten: the book grows only with busy keys")
    }

    func testANewcomerDoesNotOvertakeWaitersOfTheSameKey() {
        var book = KeyedShareBook<Int>(limit: 1)
        XCTAssertTrue(book.acquire("a", waiter: 1))
        XCTAssertFalse(book.acquire("a", waiter: 2))
        XCTAssertEqual(book.release("a"), 2)
        XCTAssertFalse(book.acquire("a", waiter: 3), "the slot went to the waiter, not to a newcomer")
    }

    func testRemovingEveryWaiterKeepsHeldSlotsCountedUntilReleased() {
        var book = KeyedShareBook<Int>(limit: 1)
        XCTAssertTrue(book.acquire("a", waiter: 1))
        XCTAssertFalse(book.acquire("a", waiter: 2))
        XCTAssertTrue(book.acquire("b", waiter: 3))
        XCTAssertFalse(book.acquire("b", waiter: 4))
        XCTAssertEqual(Set(book.removeAllWaiters()), [2, 4])
        XCTAssertEqual(book.waitingAll, 0)
        XCTAssertEqual(book.held("a"), 1)
        XCTAssertNil(book.release("a"))
        XCTAssertNil(book.release("b"))
        XCTAssertEqual(book.busyKeys, 0)
    }

    func testAWaiterCancelledInLineLeavesItAndTheSlotGoesToTheNext() {
        var book = KeyedShareBook<Int>(limit: 1)
        XCTAssertTrue(book.acquire("a", waiter: 1))
        let second = book.reserve("a")
        XCTAssertEqual(book.acquire("a", ticket: second, waiter: 2), .queued)
        XCTAssertFalse(book.acquire("a", waiter: 3))
        XCTAssertEqual(book.cancel("a", ticket: second), 2)
        XCTAssertNil(book.cancel("a", ticket: second), "a waiter leaves once")
        XCTAssertEqual(book.release("a"), 3, "the slot skips the waiter that left")
        XCTAssertNil(book.release("a"))
        XCTAssertEqual(book.busyKeys, 0)
    }

    func testACancellationBeforeTheWaiterQueuedRefusesItAndIsForgotten() {
        var book = KeyedShareBook<Int>(limit: 1)
        XCTAssertTrue(book.acquire("a", waiter: 1))
        let late = book.reserve("a")
        XCTAssertNil(book.cancel("a", ticket: late))
        XCTAssertEqual(book.acquire("a", ticket: late, waiter: 2), .cancelled)
        XCTAssertEqual(book.waiting("a"), 0)
        XCTAssertNil(book.release("a"))
        XCTAssertEqual(book.busyKeys, 0, "nothing of the cancelled waiter stays")
        let gone = book.reserve("b")
        book.forget("b", ticket: gone)
        XCTAssertEqual(book.busyKeys, 0, "a forgotten reservation leaves no queue behind")
    }
}

/// `KeyedShares`: a waiter for a destination's share leaves when its run or task is cancelled.
final class KeyedSharesCancellationTests: XCTestCase {
    func testAWaiterForAFullShareLeavesWhenItsRunIsCancelled() async {
        let shares = KeyedShares(limit: 1)
        let held = await shares.acquire("push.example")
        XCTAssertTrue(held)
        let run = RetryScope()
        let waiter = Task { await shares.acquire("push.example", cancelledBy: run) }
        for _ in 0..<1_000_000 where shares.waiting < 1 { await Task.yield() }
        XCTAssertEqual(shares.waiting, 1)
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

    func testAWaiterForAFullShareLeavesWhenItsTaskIsCancelled() async {
        let shares = KeyedShares(limit: 1)
        _ = await shares.acquire("push.example")
        let waiter = Task { await shares.acquire("push.example") }
        for _ in 0..<1_000_000 where shares.waiting < 1 { await Task.yield() }
        waiter.cancel()
        let got = await waiter.value
        XCTAssertFalse(got)
        XCTAssertEqual(shares.waiting, 0)
    }
}
