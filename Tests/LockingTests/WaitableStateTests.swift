import Clocks
import Foundation
import Locking
import TestSupport
import XCTest

/// The one waitable primitive: waits end at the update that makes their condition true, on cancellation, or at a
/// timeout; none is lost to an update racing with the wait.
final class WaitableStateTests: XCTestCase {
    func testWaitReturnsAtOnceWhenTheConditionAlreadyHolds() async {
        let state = WaitableState(5)
        await state.wait { $0 == 5 }
    }

    func testUpdateWakesOnlyTheWaitersWhoseConditionItMadeTrue() async {
        let state = WaitableState(0)
        let woken = WaitableState<[Int]>([])
        let two = Task {
            await state.wait { $0 >= 2 }
            woken.update { $0.append(2) }
        }
        let one = Task {
            await state.wait { $0 >= 1 }
            woken.update { $0.append(1) }
        }
        state.update { $0 = 1 }
        await one.value
        XCTAssertEqual(woken.read { $0 }, [1])
        state.update { $0 = 2 }
        await two.value
        XCTAssertEqual(woken.read { $0 }, [1, 2])
    }

    func testCancellationWhileWaitingEndsTheWaitAndLeavesNoWaiterBehind() async throws {
        let state = WaitableState(false)
        let waiter = Task { await state.wait { $0 } }
        try await eventually("the waiter registered") { state.waiterCount == 1 }
        waiter.cancel()
        await waiter.value
        XCTAssertFalse(state.read { $0 })
        XCTAssertEqual(state.waiterCount, 0)
    }

    func testCancellationBeforeTheWaitStartsEndsItAtOnce() async {
        let state = WaitableState(false)
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await state.wait { $0 }
        }
        await waiter.value
        XCTAssertEqual(state.waiterCount, 0)
    }

    func testWaitIgnoringCancellationEndsOnlyWhenTheConditionHolds() async throws {
        let state = WaitableState(false)
        let ended = WaitableState(false)
        let waiter = Task {
            await state.waitIgnoringCancellation { $0 }
            ended.update { $0 = true }
        }
        try await eventually("the waiter registered") { state.waiterCount == 1 }
        waiter.cancel()
        let endedEarly = await ended.wait(until: { $0 }, timeout: .milliseconds(50))
        XCTAssertFalse(endedEarly)
        state.update { $0 = true }
        await waiter.value
        XCTAssertTrue(ended.read { $0 })
    }

    func testTimeoutEndsAWaitWhoseConditionNeverHolds() async {
        let state = WaitableState(false)
        let held = await state.wait(until: { $0 }, timeout: .milliseconds(5))
        XCTAssertFalse(held)
        XCTAssertEqual(state.waiterCount, 0)
    }

    func testDeadlineWaitReportsTheConditionWhenAnUpdateComesFirst() async {
        let state = WaitableState(0)
        let waiter = Task { await state.wait(until: { $0 == 3 }, deadline: .now + .seconds(3600)) }
        state.update { $0 = 3 }
        let held = await waiter.value
        XCTAssertTrue(held)
    }

    /// Updates from plain threads racing with waits that start at the same moment: every wait ends (a lost wake-up
    /// would hang this test until XCTest's timeout).
    func testNoWakeUpIsLostToAnUpdateRacingWithTheWait() async {
        for _ in 0..<200 {
            let state = WaitableState(0)
            let waiters = (1...4).map { target in Task { await state.wait { $0 >= target } } }
            let thread = Thread { for _ in 1...4 { state.update { $0 += 1 } } }
            thread.start()
            for waiter in waiters { await waiter.value }
        }
    }

    func testLatchWakesEveryWaiterWithTheErrorsOnceAllArrived() async {
        struct Failed: Error {}
        let latch = CountdownLatch(count: 3)
        let first = Task { await latch.wait() }
        let second = Task { await latch.wait() }
        latch.arrive(nil)
        latch.arrive(Failed())
        Thread { latch.arrive(nil) }.start()
        let errors = await [first.value, second.value]
        XCTAssertEqual(errors.map(\.count), [1, 1])
        let late = await latch.wait()
        XCTAssertEqual(late.count, 1)
    }

    func testLatchWaitOutlastsTheCancellationOfItsTask() async {
        let latch = CountdownLatch(count: 1)
        let waiter = Task { await latch.wait() }
        waiter.cancel()
        try? await Task.sleep(for: .milliseconds(20))
        latch.arrive(nil)
        let errors = await waiter.value
        XCTAssertEqual(errors.count, 0)
    }

    func testWaitAtMostCancelsTheOperationAtTheTimeout() async {
        let cancelled = WaitableState(false)
        await waitAtMost(.milliseconds(10)) {
            await withTaskCancellationHandler {
                await WaitableState(false).wait { $0 }
            } onCancel: {
                cancelled.update { $0 = true }
            }
        }
        XCTAssertTrue(cancelled.read { $0 })
    }

    func testADeadlineThatPassesEndsTheWaitWithTheConditionFalseAndNoWaiterLeft() async {
        let state = WaitableState(false)
        let deadline = MonotonicInstant.now + .milliseconds(20)
        let held = await state.wait(until: { $0 }, deadline: deadline)
        XCTAssertFalse(held)
        XCTAssertTrue(deadline.hasPassed, "not before the deadline, read on the same clock")
        XCTAssertEqual(state.waiterCount, 0)
    }

    /// A wait that an update ends before its deadline keeps its timer from starting, and a timer that fires as
    /// its wait returns (or after) leaves no mark behind: nothing piles up over many short waits.
    func testTimersOfWaitsThatEndedFirstLeaveNoMarkBehind() async {
        let state = WaitableState(0)
        for round in 1...50 {
            async let held = state.wait(until: { $0 >= round }, deadline: .now + .milliseconds(round % 2 == 0 ? 1 : 5))
            // Sometimes before the wait registers, sometimes after, sometimes after its deadline.
            if round % 3 == 0 { await Task.yield() }
            state.update { $0 = round }
            _ = await held
        }
        try? await MonotonicTimer.sleep(for: .milliseconds(100))
        XCTAssertEqual(state.waiterCount, 0)
        XCTAssertEqual(state.marksLeft, 0, "no id left in the early-cancel or timed sets")
    }

    /// A deadline wait honours cancellation: cancelling the waiting task ends an hour-long wait at once.
    func testCancellingADeadlineWaitEndsItAtOnce() async {
        let state = WaitableState(false)
        let started = MonotonicClock.now()
        let waiter = Task { await state.wait(until: { $0 }, deadline: .now + .seconds(3600)) }
        while state.waiterCount == 0 { await Task.yield() }
        waiter.cancel()
        let held = await waiter.value
        XCTAssertFalse(held)
        XCTAssertLessThan(MonotonicClock.elapsed(since: started), .seconds(60))
        XCTAssertEqual(state.waiterCount, 0)
    }

    /// Topics: an update looks only at the waiters on what it names, so one that names another part leaves a
    /// waiter asleep even when its condition holds, and the next update of the waiter's part wakes it.
    func testAnUpdateWakesOnlyTheWaitersOnTheTopicsItNames() async throws {
        struct Parts: Sendable {
            var results = 0
            var stopped = false
        }
        let results = WaitTopics(rawValue: 1 << 0)
        let machine = WaitTopics(rawValue: 1 << 1)
        let state = WaitableState(Parts())
        let waiter = Task { await state.wait(on: machine) { $0.stopped || $0.results >= 2 } }
        try await eventually("the waiter registered") { state.waiterCount == 1 }
        state.update(waking: results) { $0.results = 2 }
        XCTAssertEqual(state.waiterCount, 1, "an update of another topic does not look at the waiter")
        state.update(waking: [results, machine]) { $0.results += 1 }
        await waiter.value
        XCTAssertEqual(state.waiterCount, 0)
    }

    /// A wait without topics is looked at by every update that names any; an update that names none looks at no
    /// waiter (it changed nothing a condition reads).
    func testAWaitWithoutTopicsWakesOnAnyUpdateThatNamesOne() async throws {
        let state = WaitableState(0)
        let waiter = Task { await state.wait { $0 >= 1 } }
        try await eventually("the waiter registered") { state.waiterCount == 1 }
        state.update(waking: []) { $0 = 1 }
        XCTAssertEqual(state.waiterCount, 1)
        state.update(waking: WaitTopics(rawValue: 1 << 5)) { $0 = 2 }
        await waiter.value
        XCTAssertEqual(state.waiterCount, 0)
    }

    /// Waiters are kept in the order they registered and leave from the middle when cancelled.
    func testACancelledWaiterLeavesTheOthersWaiting() async throws {
        let state = WaitableState(0)
        let first = Task { await state.wait { $0 >= 1 } }
        try await eventually("the first waiter registered") { state.waiterCount == 1 }
        let second = Task { await state.wait { $0 >= 2 } }
        try await eventually("the second waiter registered") { state.waiterCount == 2 }
        let third = Task { await state.wait { $0 >= 1 } }
        try await eventually("the third waiter registered") { state.waiterCount == 3 }
        second.cancel()
        await second.value
        XCTAssertEqual(state.waiterCount, 2)
        state.update { $0 = 1 }
        await first.value
        await third.value
        XCTAssertEqual(state.waiterCount, 0)
    }

    func testWaitAtMostUntilAnInstantCancelsTheOperationThenAndNotBefore() async {
        let cancelled = WaitableState(false)
        let deadline = MonotonicInstant.now + .milliseconds(20)
        await waitAtMost(until: deadline) {
            await withTaskCancellationHandler {
                await WaitableState(false).wait { $0 }
            } onCancel: {
                cancelled.update { $0 = true }
            }
        }
        XCTAssertTrue(cancelled.read { $0 })
        XCTAssertTrue(deadline.hasPassed)
    }
}
