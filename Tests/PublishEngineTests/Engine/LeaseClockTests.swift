import PublishEngine
import XCTest

/// The self-fence's clock: how long a run may still act on a lease it could not renew.
final class LeaseClockTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    func testAClaimIsValidForTheLeaseMinusTheMargin() {
        let clock = LeaseClock(claimSentAt: 100 * second, lease: .seconds(30), margin: .seconds(6))
        XCTAssertEqual(clock.validUntil, 124 * second)
        XCTAssertFalse(clock.hasExpired(at: 124 * second - 1))
        XCTAssertTrue(clock.hasExpired(at: 124 * second))
        XCTAssertEqual(clock.remaining(at: 114 * second), .seconds(10))
        XCTAssertEqual(clock.remaining(at: 200 * second), .zero)
    }

    func testARenewalCountsFromWhenItWasSentNotWhenItAnswered() {
        var clock = LeaseClock(claimSentAt: 0, lease: .seconds(30), margin: .seconds(6))
        // Sent at 10 s, answered at 29 s: valid until 10 + 24, not 29 + 24.
        clock.renewed(sentAt: 10 * second)
        XCTAssertEqual(clock.validUntil, 34 * second)
        XCTAssertTrue(clock.hasExpired(at: 34 * second))
    }

    func testALateAnswerOfAnOlderRenewalNeverMovesTheDeadlineBack() {
        var clock = LeaseClock(claimSentAt: 0, lease: .seconds(30), margin: .seconds(6))
        clock.renewed(sentAt: 20 * second)
        clock.renewed(sentAt: 10 * second)
        XCTAssertEqual(clock.validUntil, 44 * second)
    }

    func testWithoutRenewalsTheRunFencesBeforeTheStoreLetsAnotherNodeClaim() {
        let lease = Duration.seconds(30)
        let clock = LeaseClock(claimSentAt: 5 * second, lease: lease, margin: LeaseClock.margin(for: lease))
        // The store lets another node claim at 5 + 30 s (on its clock); this run stopped 6 s before.
        XCTAssertTrue(clock.hasExpired(at: 29 * second))
        XCTAssertFalse(clock.hasExpired(at: 29 * second - 1))
        XCTAssertEqual(LeaseClock.margin(for: .seconds(5)), .seconds(1))
    }

    func testAMarginLongerThanTheLeaseFencesAtTheClaim() {
        let clock = LeaseClock(claimSentAt: 7 * second, lease: .seconds(1), margin: .seconds(2))
        XCTAssertTrue(clock.hasExpired(at: 7 * second))
    }

    func testAHugeReadingSaturatesInsteadOfWrapping() {
        var clock = LeaseClock(claimSentAt: 0, lease: .seconds(30), margin: .seconds(6))
        clock.renewed(sentAt: .max - second)
        XCTAssertEqual(clock.validUntil, .max)
    }
}
