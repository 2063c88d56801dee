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
            waiters.append(Task {
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
        await window.waitUntilDrained(gracePeriod: 30)
        await releaser.value
        XCTAssertEqual(window.inUse, 0)
    }
}
