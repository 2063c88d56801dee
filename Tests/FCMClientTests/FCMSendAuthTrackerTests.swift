import Foundation
import XCTest

@testable import FCMClient

/// The send-side auth problem as a pure function of FCM's final answers.
final class FCMSendAuthTrackerTests: XCTestCase {
    private let t0 = Date(timeIntervalSince1970: 1_000)

    private func info(_ status: Int, _ canonical: String?, _ code: String? = nil) -> FCMErrorInfo {
        FCMErrorInfo(httpStatus: status, status: canonical, errorCode: code, message: "m")
    }

    func testConsecutiveAnswersOfOneKindCountFromTheFirst() {
        var tracker = FCMSendAuthTracker()
        tracker.record(.authError(info(403, "PERMISSION_DENIED")), now: t0)
        tracker.record(.authError(info(403, "PERMISSION_DENIED")), now: t0 + 5)
        XCTAssertEqual(
            tracker.problem,
            FCMAuthProblem(
                kind: .permissionDenied, detail: "403 PERMISSION_DENIED: m",
                since: t0, count: 2))
    }

    func testEachAuthAnswerHasItsKind() {
        let cases: [(FCMSendResult, FCMAuthProblem.Kind)] = [
            (.authError(info(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR")), .thirdPartyAuthError),
            (.authError(info(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH")), .senderIDMismatch),
            (.authError(info(403, nil)), .permissionDenied),
            (.configuration(info(404, "NOT_FOUND")), .projectNotFound),
        ]
        for (result, kind) in cases {
            var tracker = FCMSendAuthTracker()
            tracker.record(result, now: t0)
            XCTAssertEqual(tracker.problem?.kind, kind, "\(result)")
        }
    }

    func testAnotherKindStartsANewRunAndAnAcceptedMessageEndsIt() {
        var tracker = FCMSendAuthTracker()
        tracker.record(.authError(info(403, nil)), now: t0)
        tracker.record(.configuration(info(404, nil)), now: t0 + 1)
        XCTAssertEqual(tracker.problem?.kind, .projectNotFound)
        XCTAssertEqual(tracker.problem?.since, t0 + 1)
        XCTAssertEqual(tracker.problem?.count, 1)
        XCTAssertFalse(tracker.hasSent)
        tracker.record(.sent(name: "projects/p/messages/1"), now: t0 + 2)
        XCTAssertNil(tracker.problem)
        XCTAssertTrue(tracker.hasSent)
    }

    func testDeviceAndRetryAnswersNeitherStartNorEndAProblem() {
        var tracker = FCMSendAuthTracker()
        tracker.record(.authError(info(403, nil)), now: t0)
        tracker.record(.invalidToken(info(404, "NOT_FOUND", "UNREGISTERED")), now: t0 + 1)
        tracker.record(.retry(info(503, "UNAVAILABLE"), retryAfter: nil), now: t0 + 2)
        tracker.record(.invalidMessage(info(400, "INVALID_ARGUMENT")), now: t0 + 3)
        XCTAssertEqual(tracker.problem?.count, 1)
        var clean = FCMSendAuthTracker()
        clean.record(.invalidToken(info(404, "NOT_FOUND", "UNREGISTERED")), now: t0)
        XCTAssertNil(clean.problem)
    }
}
