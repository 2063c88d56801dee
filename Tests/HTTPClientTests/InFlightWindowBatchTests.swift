import Locking
import XCTest

@testable import HTTPClient

/// Waiters are admitted a batch of slots at a time (`InFlightWindow.Slots`), and a slot freed below the batch still
/// reaches a waiter through the flush.
final class InFlightWindowBatchTests: XCTestCase {
    func testTheBatchIsASixteenthOfTheWindowBetweenOneAndThirtyTwo() {
        XCTAssertEqual(InFlightWindow.resumeBatch(capacity: 1), 1)
        XCTAssertEqual(InFlightWindow.resumeBatch(capacity: 31), 1)
        XCTAssertEqual(InFlightWindow.resumeBatch(capacity: 400), 25, "FCM's default window, 4 x 100")
        XCTAssertEqual(InFlightWindow.resumeBatch(capacity: 512), 32, "Web Push's default window")
        XCTAssertEqual(InFlightWindow.resumeBatch(capacity: 10_000), 32)
    }

    func testAFreedSlotBelowTheBatchAsksForAFlushOnceAndTheBatchAdmitsTheWaiters() {
        var slots = InFlightWindow.Slots(capacity: 64)  // batch 4
        for _ in 0..<64 { XCTAssertNotNil(slots.admit()) }
        XCTAssertNil(slots.admit(), "full")
        XCTAssertEqual(slots.released(waiting: 10), .admitLater, "1 free of a batch of 4: a flush later")
        XCTAssertEqual(slots.released(waiting: 10), .none, "the flush is due already")
        XCTAssertEqual(slots.released(waiting: 10), .none)
        XCTAssertEqual(slots.released(waiting: 10), .admit(4), "4 free: the batch goes to the longest waiters")
        XCTAssertEqual(slots.inUse, 64, "the admitted waiters hold the slots")
        XCTAssertEqual(slots.flushed(waiting: 6), 0, "the late flush finds no free slot")
        XCTAssertFalse(slots.flushDue)
    }

    func testTheFlushAdmitsWhoeverWaitsIntoTheFreeSlotsWhateverTheirNumber() {
        var slots = InFlightWindow.Slots(capacity: 64)
        for _ in 0..<64 { _ = slots.admit() }
        XCTAssertEqual(slots.released(waiting: 1), .admitLater)
        XCTAssertEqual(slots.released(waiting: 1), .none)
        XCTAssertEqual(slots.flushed(waiting: 1), 1, "2 slots free, 1 waiter: admitted")
        XCTAssertEqual(slots.inUse, 63)
        XCTAssertEqual(slots.released(waiting: 0), .none, "nobody waits: no flush")
        XCTAssertFalse(slots.flushDue)
    }

    func testASmallWindowAdmitsAWaiterPerFreedSlotAsBefore() {
        var slots = InFlightWindow.Slots(capacity: 8)
        for _ in 0..<8 { _ = slots.admit() }
        XCTAssertEqual(slots.released(waiting: 3), .admit(1))
        XCTAssertEqual(slots.inUse, 8)
    }

    /// A window of 64 slots (a batch of 4), every slot taken, and `count` callers parked in its line.
    private func fullWindow(
        waiters count: Int, scheduleFlush: @escaping InFlightWindow.FlushScheduler = InFlightWindow.timerFlush
    ) async -> (InFlightWindow, [Task<Bool, Never>]) {
        let window = InFlightWindow(capacity: 64, scheduleFlush: scheduleFlush)
        for _ in 0..<64 { _ = await window.acquire() }
        let waiters = (0..<count).map { _ in Task { await window.acquire() } }
        for _ in 0..<1_000_000 where window.waiting < count { await Task.yield() }
        XCTAssertEqual(window.waiting, count)
        return (window, waiters)
    }

    func testAWaiterInAFullWindowIsAdmittedOnceABatchOfSlotsIsFree() async {
        let (window, waiters) = await fullWindow(waiters: 3)
        for _ in 0..<4 { window.release() }
        for waiter in waiters {
            let admitted = await waiter.value
            XCTAssertTrue(admitted)
        }
        XCTAssertEqual(window.inUse, 63, "3 of the 4 freed slots taken over")
    }

    func testASlotFreedBelowTheBatchReachesTheWaiterThroughTheFlush() async {
        // Slots held by requests waiting out a long retry delay must not keep a waiter out while one is free.
        let (window, waiters) = await fullWindow(waiters: 1)
        window.release()
        let admitted = await waiters[0].value
        XCTAssertTrue(admitted)
        XCTAssertEqual(window.inUse, 64)
        XCTAssertEqual(window.waiting, 0)
    }

    func testWaitersRefusedByCloseAreNotAdmittedByALaterFlush() async {
        // The flush is held and run after `close`: with the real 5 ms timer a loaded machine could run it first
        // (CI on 9f8eacf admitted the waiter that way).
        let flushes = Locked<[@Sendable () -> Void]>([])
        let (window, waiters) = await fullWindow(waiters: 1) { _, body in flushes.withLock { $0.append(body) } }
        window.release()
        XCTAssertEqual(flushes.withLock { $0.count }, 1, "1 free of a batch of 4: a flush is asked for")
        window.close()
        let admitted = await waiters[0].value
        XCTAssertFalse(admitted)
        for flush in flushes.withLock({ $0 }) { flush() }
        XCTAssertEqual(window.inUse, 63, "the flush found the window closed")
        XCTAssertEqual(window.waiting, 0)
    }
}

/// The loop an `HTTPExchangeClient` hands the next exchange to (`LoopChoice`).
final class LoopChoiceTests: XCTestCase {
    private func pick(_ loads: [Int], last: Int, slack: Int = 4, limit: Int = 100) -> Int {
        LoopChoice.pick(count: loads.count, last: last, slack: slack, limit: limit) { loads[$0] }
    }

    func testTheLastLoopKeepsTheRunWhileWithinTheSlackOfTheLeastBusy() {
        XCTAssertEqual(pick([10, 6, 8, 9], last: 0), 0, "10 <= 6 + 4")
        XCTAssertEqual(pick([11, 6, 8, 9], last: 0), 1, "11 > 6 + 4: the least busy")
    }

    func testTheLeastBusyLoopTakesItWithoutALastOrOnTies() {
        XCTAssertEqual(pick([3, 3, 3], last: -1), 0, "the first of equals")
        XCTAssertEqual(pick([5, 2, 2], last: 7), 1, "an unknown last loop is ignored")
        XCTAssertEqual(pick([4], last: 0), 0)
    }

    func testTheLastLoopIsLeftOnceItsConnectionHasNoFreeStream() {
        XCTAssertEqual(pick([100, 97, 98], last: 0, slack: 25, limit: 100), 1)
        XCTAssertEqual(pick([99, 97, 98], last: 0, slack: 25, limit: 100), 0)
    }
}
