import Foundation
import XCTest

@testable import WebPush

/// Push services refusing the VAPID credentials, per host, as a pure function of their answers.
final class WebPushCredentialTrackerTests: XCTestCase {
    private let t0 = Date(timeIntervalSince1970: 1_000)

    func testRefusalsAreCountedPerHostUntilThatHostAcceptsAMessage() {
        var tracker = WebPushCredentialTracker()
        tracker.record(
            .configurationError(status: 403, detail: #"{"reason":"BadJwtToken"}"#), host: "web.push.apple.com", now: t0)
        tracker.record(.configurationError(status: 403, detail: "again"), host: "web.push.apple.com", now: t0 + 1)
        tracker.record(.configurationError(status: 401, detail: "no vapid"), host: "fcm.googleapis.com", now: t0 + 2)
        XCTAssertEqual(tracker.list.map(\.host), ["web.push.apple.com", "fcm.googleapis.com"])
        XCTAssertEqual(
            tracker.list.first,
            WebPushCredentialProblem(
                host: "web.push.apple.com", status: 403, detail: "again",
                since: t0, count: 2))
        tracker.record(.accepted(status: 201), host: "fcm.googleapis.com", now: t0 + 3)
        XCTAssertEqual(tracker.list.map(\.host), ["web.push.apple.com"], "another host's success clears only its own")
    }

    func testOtherAnswersAreNotCredentialProblems() {
        var tracker = WebPushCredentialTracker()
        for outcome in [
            WebPushOutcome.configurationError(status: 400, detail: "bad TTL"), .subscriptionGone(status: 410),
            .payloadTooLarge, .retry(status: 429, after: 1), .unknown(status: 418),
        ] {
            tracker.record(outcome, host: "h", now: t0)
        }
        XCTAssertTrue(tracker.list.isEmpty)
    }

    func testTheTableIsBoundedByDroppingTheOldestHost() {
        var tracker = WebPushCredentialTracker()
        for index in 0..<(WebPushCredentialTracker.maxHosts + 3) {
            tracker.record(.configurationError(status: 403, detail: ""), host: "h\(index)", now: t0 + Double(index))
        }
        XCTAssertEqual(tracker.list.count, WebPushCredentialTracker.maxHosts)
        XCTAssertEqual(tracker.list.first?.host, "h3")
    }
}
