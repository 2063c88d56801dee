import Foundation
import HTTPClient
import Locking
import XCTest

/// `RetryDeadline` (the earlier of the publish's `expiresAt` and the message's lifetime) and `RetryScope` (a run's
/// waiting retries, ended at once by a cancel): pure, no sockets or clocks.
final class RetryDeadlineTests: XCTestCase {
    private let start = Date(timeIntervalSince1970: 1_000_000)

    func testTheDeadlineIsTheEarlierOfTheWindowAndTheMessageLifetime() {
        let window = start.addingTimeInterval(8)
        XCTAssertEqual(RetryDeadline(expiresAt: window, timeToLive: 5, from: start).at, start.addingTimeInterval(5))
        XCTAssertEqual(RetryDeadline(expiresAt: window, timeToLive: 60, from: start).at, window)
        XCTAssertEqual(RetryDeadline(expiresAt: nil, timeToLive: 60, from: start).at, start.addingTimeInterval(60))
        XCTAssertEqual(RetryDeadline(expiresAt: window, timeToLive: nil, from: start).at, window)
        XCTAssertNil(RetryDeadline(expiresAt: nil, timeToLive: nil, from: start).at)
        XCTAssertEqual(RetryDeadline(expiresAt: nil, timeToLive: 0, from: start).at, start, "TTL 0: now or never")
    }

    func testSecondsLeftAndLateness() {
        let deadline = RetryDeadline(expiresAt: nil, timeToLive: 5, from: start)
        XCTAssertEqual(deadline.secondsLeft(at: start.addingTimeInterval(1)), 4)
        XCTAssertEqual(deadline.secondsLeft(at: start.addingTimeInterval(6)), -1)
        XCTAssertNil(RetryDeadline.none.secondsLeft(at: start))
        XCTAssertTrue(RetryDeadline.isLate(delay: 60, secondsLeft: 4))
        XCTAssertFalse(RetryDeadline.isLate(delay: 4, secondsLeft: 4), "a retry landing on the deadline still goes")
        XCTAssertTrue(RetryDeadline.isLate(delay: 0, secondsLeft: -1), "nothing is sent once the deadline passed")
        XCTAssertFalse(RetryDeadline.isLate(delay: 86_400, secondsLeft: nil), "no deadline: never late")
    }

    func testCancelRunsEveryWaitingHandlerOnceAndRefusesLaterWaits() {
        let scope = RetryScope()
        let ended = Locked<[Int]>([])
        let first = scope.wait { ended.withLock { $0.append(1) } }
        let second = scope.wait { ended.withLock { $0.append(2) } }
        XCTAssertNotNil(first)
        XCTAssertEqual(scope.waitingCount, 2)
        scope.cancel()
        XCTAssertEqual(ended.withLock { $0 }, [1, 2])
        XCTAssertTrue(scope.isCancelled)
        XCTAssertEqual(scope.waitingCount, 0)
        XCTAssertFalse(scope.resume(second!), "the timer firing after the cancel must not send")
        XCTAssertNil(scope.wait { ended.withLock { $0.append(3) } }, "a retry after the cancel is refused at once")
        scope.cancel()
        XCTAssertEqual(ended.withLock { $0 }, [1, 2], "each handler runs once")
    }

    func testAResumedRetryIsNotEndedByALaterCancel() {
        let scope = RetryScope()
        let ended = Locked(0)
        let ticket = scope.wait { ended.withLock { $0 += 1 } }!
        XCTAssertTrue(scope.resume(ticket))
        XCTAssertFalse(scope.resume(ticket))
        scope.cancel()
        XCTAssertEqual(ended.withLock { $0 }, 0)
    }

    func testScopesCompareByIdentity() {
        let scope = RetryScope()
        XCTAssertEqual(scope, scope)
        XCTAssertNotEqual(scope, RetryScope())
    }
}
