import Dispatch
import Foundation
import Glibc
import Locking
import XCTest

/// `ThreadPriority` and `BulkPriority`: which threads run below normal OS priority, and when. The rule is pure; the
/// priority itself is read back from the kernel on plain threads of their own.
final class ThreadPriorityTests: XCTestCase {
    func testALoweredThreadRunsAtBulkNiceWhileOtherThreadsKeepTheProcesssPriority() throws {
        let normal = ThreadPriority.normalNice
        try XCTSkipIf(normal >= ThreadPriority.bulkNice, "the test process itself runs at nice \(normal)")
        let lowered = onThread { () -> (Bool, Int32) in
            let changed = ThreadPriority.lowerCurrentToBulk()
            return (changed, ThreadPriority.currentNice)
        }
        XCTAssertEqual(lowered?.0, true)
        XCTAssertEqual(lowered?.1, ThreadPriority.bulkNice, "the kernel reports the lowered thread at bulk nice")
        XCTAssertEqual(onThread { ThreadPriority.currentNice }, normal, "a new thread is not lowered by another's call")
        XCTAssertEqual(ThreadPriority.currentNice, normal, "the calling test thread is untouched")
    }

    func testLoweringNeverRaisesTheThreadsPriority() {
        let nice = onThread { () -> Int32 in
            ThreadPriority.setCurrent(nice: 15)
            ThreadPriority.lowerCurrentToBulk()
            return ThreadPriority.currentNice
        }
        XCTAssertEqual(nice, 15, "a thread already below bulk priority stays there")
        XCTAssertEqual(BulkPriority.bulkTarget(current: 0, bulk: 10), 10)
        XCTAssertEqual(BulkPriority.bulkTarget(current: 15, bulk: 10), 15)
        XCTAssertEqual(BulkPriority.bulkTarget(current: -5, bulk: 10), 10)
    }

    func testASenderGoesToBulkPriorityAtAFanOutsLoadAndBackOnlyOnceNearlyIdle() {
        var rule = BulkPriority(enterAt: 32, leaveAt: 4)
        XCTAssertNil(rule.change(load: 1), "one transactional push keeps normal priority")
        XCTAssertNil(rule.change(load: 31))
        XCTAssertEqual(rule.change(load: 32), .lower)
        rule.applied(.lower, succeeded: true)
        XCTAssertTrue(rule.isLowered)
        XCTAssertNil(rule.change(load: 200))
        XCTAssertNil(rule.change(load: 5), "between the two marks it stays: no switch on every transfer")
        XCTAssertEqual(rule.change(load: 4), .restore)
        rule.applied(.restore, succeeded: true)
        XCTAssertFalse(rule.isLowered)
        XCTAssertNil(rule.change(load: 5))
    }

    func testWhereTheSystemRefusesAChangeTheRuleStopsAskingForIt() {
        var refusedRestore = BulkPriority(enterAt: 32, leaveAt: 4)
        refusedRestore.applied(.lower, succeeded: true)
        refusedRestore.applied(.restore, succeeded: false)
        XCTAssertTrue(refusedRestore.isLowered, "without the right to lower a nice value, the thread stays at bulk")
        XCTAssertNil(refusedRestore.change(load: 0))

        var refusedLower = BulkPriority(enterAt: 32, leaveAt: 4)
        refusedLower.applied(.lower, succeeded: false)
        XCTAssertFalse(refusedLower.isLowered)
        XCTAssertNil(refusedLower.change(load: 500), "a sandbox without setpriority: not asked on every turn")
    }

    func testTheMarksAreOrderedWhateverTheyWereGiven() {
        let rule = BulkPriority(enterAt: 8, leaveAt: 20)
        XCTAssertEqual(rule.enterAt, 8)
        XCTAssertEqual(rule.leaveAt, 7)
        XCTAssertEqual(BulkPriority(enterAt: 0, leaveAt: -3).enterAt, 1)
        XCTAssertEqual(BulkPriority(enterAt: 0, leaveAt: -3).leaveAt, 0)
    }

    func testFollowingTheLoadMovesTheCallingThreadDownAndBack() throws {
        try XCTSkipIf(ThreadPriority.normalNice >= ThreadPriority.bulkNice, "the test process runs at bulk nice")
        let seen = onThread { () -> [Int32] in
            var rule = BulkPriority(enterAt: 32, leaveAt: 4)
            var nices: [Int32] = []
            rule.follow(load: 100)
            nices.append(ThreadPriority.currentNice)
            rule.follow(load: 0)
            nices.append(ThreadPriority.currentNice)
            // Back at normal only where lowering a nice value is allowed (root or RLIMIT_NICE); else it stays.
            nices.append(rule.isLowered ? 1 : 0)
            return nices
        }
        let values = try XCTUnwrap(seen)
        XCTAssertEqual(values[0], ThreadPriority.bulkNice)
        if values[2] == 0 {
            XCTAssertEqual(values[1], ThreadPriority.normalNice)
        } else {
            XCTAssertEqual(values[1], ThreadPriority.bulkNice, "refused: the thread stays at bulk priority")
        }
    }
}
