import HTTPClient
import Locking
import XCTest

final class InFlightWindowTests: XCTestCase {
    func testAcquireSuspendsWhileFullAndTheReleaseHandsTheSlotToTheLongestWaiter() async {
        let window = InFlightWindow(capacity: 1)
        let first = await window.acquire()
        XCTAssertTrue(first)
        let order = Locked<[Int]>([])
        // The second waiter starts only once the first has parked: two tasks started together park in either
        // order, and "the longest waiter" would then be the second one (the test used to hang awaiting the first).
        var waiters: [Task<Bool, Never>] = []
        for index in 1...2 {
            waiters.append(
                Task {
                    let got = await window.acquire()
                    order.withLock { $0.append(index) }
                    return got
                })
            // Parked waiters are counted under the window's lock; bounded, so a waiter that never parks fails the
            // assertion below instead of hanging the test.
            for _ in 0..<1_000_000 where window.waiting < index { await Task.yield() }
        }
        XCTAssertEqual(window.waiting, 2)
        XCTAssertEqual(window.inUse, 1)
        window.release()
        let firstGot = await waiters[0].value
        XCTAssertTrue(firstGot)
        XCTAssertEqual(order.withLock { $0 }, [1])
        XCTAssertEqual(window.inUse, 1, "the slot passed on without being freed")
        window.release()
        let secondGot = await waiters[1].value
        XCTAssertTrue(secondGot)
        window.release()
        XCTAssertEqual(window.inUse, 0)
    }

    func testCloseWakesEveryWaiterWithFalseAndRefusesNewSlots() async {
        let window = InFlightWindow(capacity: 1)
        _ = await window.acquire()
        let waiter = Task { await window.acquire() }
        for _ in 0..<1_000_000 where window.waiting < 1 { await Task.yield() }
        XCTAssertEqual(window.waiting, 1)
        window.close()
        let woken = await waiter.value
        XCTAssertFalse(woken)
        let late = await window.acquire()
        XCTAssertFalse(late)
    }

    func testWaitUntilDrainedReturnsWhenTheLastSlotIsReleased() async {
        let window = InFlightWindow(capacity: 2)
        _ = await window.acquire()
        let releaser = Task.detached { window.release() }
        await window.waitUntilDrained(gracePeriod: .seconds(30))
        await releaser.value
        XCTAssertEqual(window.inUse, 0)
    }
}

/// A waiter leaves the window when its run or its task is cancelled, and the slots stay counted right.
final class InFlightWindowCancellationTests: XCTestCase {
    private func parked(_ window: InFlightWindow, _ count: Int) async {
        for _ in 0..<1_000_000 where window.waiting < count { await Task.yield() }
        XCTAssertEqual(window.waiting, count)
    }

    func testAWaiterWhoseRunIsCancelledLeavesAtOnceAndTheNextWaiterStillGetsTheSlot() async {
        let window = InFlightWindow(capacity: 1)
        _ = await window.acquire()
        let run = RetryScope()
        let cancelled = Task { await window.acquire(cancelledBy: run) }
        await parked(window, 1)
        let next = Task { await window.acquire() }
        await parked(window, 2)
        run.cancel()
        let gotCancelled = await cancelled.value
        XCTAssertFalse(gotCancelled, "a cancelled run's waiter takes no slot")
        XCTAssertEqual(window.waiting, 1)
        window.release()
        let gotNext = await next.value
        XCTAssertTrue(gotNext, "the slot passes over the cancelled waiter")
        XCTAssertEqual(window.inUse, 1)
        XCTAssertEqual(run.waitingCount, 0, "the run keeps no handler of a waiter that left")
    }

    func testAWaiterWhoseTaskIsCancelledLeavesAtOnce() async {
        let window = InFlightWindow(capacity: 1)
        _ = await window.acquire()
        let waiter = Task { await window.acquire() }
        await parked(window, 1)
        waiter.cancel()
        let got = await waiter.value
        XCTAssertFalse(got)
        XCTAssertEqual(window.waiting, 0)
        XCTAssertEqual(window.inUse, 1)
    }

    func testARunCancelledBeforeTheWaitAndASlotFreedMeanwhileAreBothRespected() async {
        let window = InFlightWindow(capacity: 1)
        _ = await window.acquire()
        let run = RetryScope()
        run.cancel()
        let got = await window.acquire(cancelledBy: run)
        XCTAssertFalse(got, "a run cancelled already does not wait")
        window.release()
        let free = await window.acquire(cancelledBy: RetryScope())
        XCTAssertTrue(free)
        XCTAssertEqual(window.inUse, 1)
    }
}
