import Foundation
@testable import PushServer
import XCTest

/// The engine's wake-up primitive: waits end at the update that makes their condition true.
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

    func testCancellationEndsAWait() async {
        let state = WaitableState(false)
        let waiter = Task { await state.wait { $0 } }
        waiter.cancel()
        await waiter.value
        XCTAssertFalse(state.read { $0 })
    }

    func testDeadlineEndsAWaitWhoseConditionNeverHolds() async {
        let state = WaitableState(false)
        let held = await state.wait(until: { $0 }, deadline: .now + .milliseconds(5))
        XCTAssertFalse(held)
    }

    func testDeadlineWaitReportsTheConditionWhenAnUpdateComesFirst() async {
        let state = WaitableState(0)
        let waiter = Task { await state.wait(until: { $0 == 3 }, deadline: .now + .seconds(3600)) }
        state.update { $0 = 3 }
        let held = await waiter.value
        XCTAssertTrue(held)
    }
}
