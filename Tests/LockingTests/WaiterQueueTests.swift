import Locking
import XCTest

/// `WaiterQueue`: first in, first out, with waiters that leave early, also before they queued.
final class WaiterQueueTests: XCTestCase {
    func testWaitersLeaveInArrivalOrderSkippingThoseCancelled() {
        var queue = WaiterQueue<String>()
        let tickets = ["a", "b", "c"].map { name -> WaiterQueue<String>.Ticket in
            let ticket = queue.reserve()
            XCTAssertTrue(queue.enqueue(name, ticket: ticket))
            return ticket
        }
        XCTAssertEqual(queue.cancel(tickets[1]), "b")
        XCTAssertNil(queue.cancel(tickets[1]), "a waiter leaves once")
        XCTAssertEqual(queue.count, 2)
        XCTAssertEqual(queue.popFirst(), "a")
        XCTAssertEqual(queue.popFirst(), "c")
        XCTAssertNil(queue.popFirst())
        XCTAssertNil(queue.cancel(tickets[2]), "a waiter already served is not cancelled")
    }

    func testACancellationBeforeTheWaiterQueuedRefusesItsEnqueue() {
        var queue = WaiterQueue<Int>()
        let ticket = queue.reserve()
        XCTAssertNil(queue.cancel(ticket))
        XCTAssertTrue(queue.isCancelledEarly(ticket))
        XCTAssertFalse(queue.enqueue(1, ticket: ticket), "it must answer cancelled, not wait")
        XCTAssertTrue(queue.isEmpty)
        XCTAssertFalse(queue.isCancelledEarly(ticket), "the mark is gone with the waiter")
    }

    func testACancellationAfterTheWaiterSettledLeavesNoMark() {
        var queue = WaiterQueue<Int>()
        let ticket = queue.reserve()
        queue.settle(ticket)
        XCTAssertNil(queue.cancel(ticket))
        XCTAssertFalse(queue.isCancelledEarly(ticket), "a settled ticket is forgotten: nothing grows per wait")
    }

    func testManyCancelledWaitersDoNotKeepTheLineLong() {
        var queue = WaiterQueue<Int>()
        let keeper = queue.reserve()
        XCTAssertTrue(queue.enqueue(-1, ticket: keeper))
        for value in 0..<10_000 {
            let ticket = queue.reserve()
            XCTAssertTrue(queue.enqueue(value, ticket: ticket))
            XCTAssertEqual(queue.cancel(ticket), value)
        }
        XCTAssertEqual(queue.count, 1)
        XCTAssertLessThan(queue.lineLength, 2_100, "cancelled tickets are dropped from the line")
        XCTAssertEqual(queue.removeAll(), [-1])
    }
}
