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
        var rule = BulkPriority(enterAt: 32, leaveAt: 4, canRestore: true)
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
        var refusedRestore = BulkPriority(enterAt: 32, leaveAt: 4, canRestore: true)
        refusedRestore.applied(.lower, succeeded: true)
        refusedRestore.applied(.restore, succeeded: false)
        XCTAssertTrue(refusedRestore.isLowered, "without the right to lower a nice value, the thread stays at bulk")
        XCTAssertNil(refusedRestore.change(load: 0))

        var refusedLower = BulkPriority(enterAt: 32, leaveAt: 4, canRestore: true)
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

    func testWithoutTheRightToComeBackASenderIsNeverLowered() {
        var rule = BulkPriority(enterAt: 32, leaveAt: 4, canRestore: false)
        XCTAssertNil(rule.change(load: 32), "it would stay at bulk priority after its fan-out")
        XCTAssertNil(rule.change(load: 10_000))
        rule.follow(load: 10_000)
        XCTAssertFalse(rule.isLowered)
        XCTAssertTrue(rule.canLower, "not refused by the system: never asked")
    }

    func testTheRightToComeBackFollowsCapSysNiceOrTheNiceLimit() {
        XCTAssertTrue(ThreadPriority.mayReturn(to: 0, hasSysNice: true, niceLimit: 0), "CAP_SYS_NICE: always")
        XCTAssertTrue(ThreadPriority.mayReturn(to: -20, hasSysNice: true, niceLimit: 0))
        XCTAssertTrue(
            ThreadPriority.mayReturn(to: 0, hasSysNice: false, niceLimit: 20), "LimitNICE=+0 reaches nice 0")
        XCTAssertFalse(ThreadPriority.mayReturn(to: 0, hasSysNice: false, niceLimit: 19), "nice 1 at best")
        XCTAssertFalse(ThreadPriority.mayReturn(to: 0, hasSysNice: false, niceLimit: 0), "the kernel's default")
        XCTAssertFalse(
            ThreadPriority.mayReturn(to: -5, hasSysNice: false, niceLimit: 20), "a service started at nice -5")
        XCTAssertTrue(ThreadPriority.mayReturn(to: 5, hasSysNice: false, niceLimit: 15), "started at nice 5")
        XCTAssertTrue(ThreadPriority.mayReturn(to: -20, hasSysNice: false, niceLimit: UInt64.max), "RLIM_INFINITY")
    }

    func testCapSysNiceIsReadFromTheEffectiveSetOnly() {
        let status = "Name:\tpush-server\nCapInh:\t0000000000800000\nCapPrm:\t0000000000800000\n"
        XCTAssertTrue(ThreadPriority.hasSysNice(status: status + "CapEff:\t0000000000800000\n"), "bit 23")
        XCTAssertTrue(ThreadPriority.hasSysNice(status: status + "CapEff:\t000001fffeffffff\nCapBnd:\t0\n"))
        XCTAssertFalse(ThreadPriority.hasSysNice(status: status + "CapEff:\t0000000000000000\n"))
        XCTAssertFalse(ThreadPriority.hasSysNice(status: status + "CapEff:\t0000000001000000\n"), "bit 24 only")
        XCTAssertFalse(ThreadPriority.hasSysNice(status: status), "no CapEff line")
        XCTAssertFalse(ThreadPriority.hasSysNice(status: "CapEff:\tzz\n"))
        XCTAssertFalse(ThreadPriority.hasSysNice(status: ""))
    }

    func testTheProcesssAnswerAgreesWithTheKernel() throws {
        try XCTSkipIf(ThreadPriority.normalNice >= ThreadPriority.bulkNice, "the test process runs at bulk nice")
        let back = try XCTUnwrap(
            onThread { () -> Bool in
                ThreadPriority.lowerCurrentToBulk()
                return ThreadPriority.setCurrent(nice: ThreadPriority.normalNice)
            })
        XCTAssertEqual(back, ThreadPriority.mayReturnToNormal, "the kernel let a lowered thread back: \(back)")
    }

    func testASenderFollowingTheLoadIsAtNormalPriorityOnceNearlyIdleWhateverTheSystemAllows() throws {
        try XCTSkipIf(ThreadPriority.normalNice >= ThreadPriority.bulkNice, "the test process runs at bulk nice")
        let seen = onThread { () -> [Int32] in
            var rule = BulkPriority(enterAt: 32, leaveAt: 4)
            rule.follow(load: 100)
            let busy = ThreadPriority.currentNice
            rule.follow(load: 0)
            return [busy, ThreadPriority.currentNice]
        }
        let values = try XCTUnwrap(seen)
        // Where the process may come back (root, CAP_SYS_NICE or LimitNICE), down and back; elsewhere never down.
        let busy = ThreadPriority.mayReturnToNormal ? ThreadPriority.bulkNice : ThreadPriority.normalNice
        XCTAssertEqual(values[0], busy)
        XCTAssertEqual(values[1], ThreadPriority.normalNice, "never left at bulk priority")
    }

    func testFollowingTheLoadMovesTheCallingThreadDownAndBack() throws {
        try XCTSkipIf(ThreadPriority.normalNice >= ThreadPriority.bulkNice, "the test process runs at bulk nice")
        try XCTSkipUnless(ThreadPriority.mayReturnToNormal, "no CAP_SYS_NICE and RLIMIT_NICE below nice 0")
        let seen = onThread { () -> [Int32] in
            var rule = BulkPriority(enterAt: 32, leaveAt: 4, canRestore: true)
            rule.follow(load: 100)
            let busy = ThreadPriority.currentNice
            rule.follow(load: 0)
            return [busy, ThreadPriority.currentNice, rule.isLowered ? 1 : 0]
        }
        XCTAssertEqual(seen, [ThreadPriority.bulkNice, ThreadPriority.normalNice, 0])
    }

    func testAThreadToldItCannotComeBackKeepsItsPriorityUnderAnyLoad() {
        let seen = onThread { () -> [Int32] in
            var rule = BulkPriority(enterAt: 32, leaveAt: 4, canRestore: false)
            let before = ThreadPriority.currentNice
            rule.follow(load: 100)
            let busy = ThreadPriority.currentNice
            rule.follow(load: 0)
            return [before, busy, ThreadPriority.currentNice, rule.isLowered ? 1 : 0]
        }
        let normal = ThreadPriority.normalNice
        XCTAssertEqual(seen, [normal, normal, normal, 0])
    }
}
