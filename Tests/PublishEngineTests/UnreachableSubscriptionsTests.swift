import PublishEngine
import XCTest

/// Repeated unanswered Web Push deliveries invalidate a subscription, as a state machine (times in plain seconds).
final class UnreachableSubscriptionsTests: XCTestCase {
    func testTheStreakInvalidatesOnlyOnceItHasEnoughFailuresAndSpansTheTime() {
        var book = UnreachableSubscriptionBook(failures: 3, seconds: 3600)
        XCTAssertFalse(book.record(7, unanswered: true, now: 0))
        XCTAssertFalse(book.record(7, unanswered: true, now: 10))
        XCTAssertFalse(book.record(7, unanswered: true, now: 20), "three failures within a minute: an outage, kept")
        XCTAssertFalse(book.record(7, unanswered: true, now: 3599))
        XCTAssertTrue(book.record(7, unanswered: true, now: 3600))
        XCTAssertEqual(book.following, 0, "forgotten once invalidated")
    }

    func testAnyAnswerEndsTheStreak() {
        var book = UnreachableSubscriptionBook(failures: 2, seconds: 0)
        XCTAssertFalse(book.record(1, unanswered: true, now: 0))
        XCTAssertFalse(book.record(1, unanswered: false, now: 1))
        XCTAssertFalse(book.record(1, unanswered: true, now: 2), "counting starts again")
        XCTAssertTrue(book.record(1, unanswered: true, now: 3))
    }

    func testPastItsCapacityNoNewStreakStartsAndNothingIsInvalidatedEarly() {
        var book = UnreachableSubscriptionBook(failures: 1, seconds: 10, capacity: 1)
        XCTAssertFalse(book.record(1, unanswered: true, now: 0))
        XCTAssertFalse(book.record(2, unanswered: true, now: 0))
        XCTAssertFalse(book.record(2, unanswered: true, now: 20), "never followed: not removed")
        XCTAssertTrue(book.record(1, unanswered: true, now: 20))
    }

    func testOnlyUnansweredVerdictsCountAndTheLastOneInvalidatesWithItsReason() {
        let unreachable = UnreachableSubscriptions(failures: 2, seconds: 0)
        XCTAssertEqual(unreachable.judge(.failed("TransportError"), device: 1, now: 0), .failed("TransportError"))
        XCTAssertEqual(
            unreachable.judge(.unfinished, device: 1, now: 1), .unfinished, "a shutdown neither counts nor resets")
        XCTAssertEqual(
            unreachable.judge(.failed("DestinationRefused"), device: 1, now: 2),
            .failed("SubscriptionUnreachable", status: 0, effect: .badToken))
        XCTAssertEqual(unreachable.judge(.failed("TransportError"), device: 2, now: 0), .failed("TransportError"))
        XCTAssertEqual(
            unreachable.judge(.failed("TooManyRequests", status: 429), device: 2, now: 1),
            .failed("TooManyRequests", status: 429), "the push service answered")
        XCTAssertEqual(unreachable.judge(.failed("TransportError"), device: 2, now: 2), .failed("TransportError"))
    }
}
