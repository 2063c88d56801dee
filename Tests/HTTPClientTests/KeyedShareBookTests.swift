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
}
