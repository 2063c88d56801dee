import BeamsModel
import Foundation
import PushStore
import XCTest

final class ReportingPolicyTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func publish(
        _ kind: PublishKind = .interests, createdAgo: Double = 600, started: Bool = true,
        finishedAgo: Double? = 500, targetsDevice: Bool = true
    ) -> ReportedPublish {
        ReportedPublish(
            kind: kind, createdAt: now - createdAgo, startedAt: started ? now - createdAgo : nil,
            finishedAt: finishedAgo.map { now - $0 }, targetsDevice: targetsDevice)
    }

    private func judge(
        _ seconds: Double, deviceCreatedAgo: Double = 86_400, user: String? = nil,
        _ publish: ReportedPublish?
    ) -> ReportingPolicy.Verdict {
        ReportingPolicy.judge(
            timestampSecs: seconds, deviceCreatedAt: now - deviceCreatedAgo, deviceUserID: user,
            publish: publish, now: now)
    }

    func testAnEventInsideTheWindowKeepsTheDevicesTime() {
        let at = now.timeIntervalSince1970 - 300
        XCTAssertEqual(
            judge(at, publish()), .record(at: Date(timeIntervalSince1970: at), userID: nil, notifyUser: false))
    }

    func testAFutureTimestampIsClampedToNow() {
        XCTAssertEqual(judge(4_102_444_800, publish()), .record(at: now, userID: nil, notifyUser: false))
        XCTAssertEqual(judge(1e300, publish()), .record(at: now, userID: nil, notifyUser: false))
    }

    func testATimestampBeforeThePublishIsClampedToItsCreation() {
        XCTAssertEqual(judge(0, publish(createdAgo: 600)), .record(at: now - 600, userID: nil, notifyUser: false))
        XCTAssertEqual(judge(-1e300, publish(createdAgo: 600)), .record(at: now - 600, userID: nil, notifyUser: false))
    }

    func testATimestampBeforeTheDeviceExistedIsClampedToTheDevicesCreation() {
        let verdict = judge(
            now.timeIntervalSince1970 - 550, deviceCreatedAgo: 520, publish(createdAgo: 600, finishedAgo: 10))
        XCTAssertEqual(verdict, .record(at: now - 520, userID: nil, notifyUser: false))
    }

    func testTheUserIsTheDevicesBindingAndOnlyAUsersPublishToThatUserNotifies() {
        let at = now.timeIntervalSince1970
        XCTAssertEqual(
            judge(at, user: "alice", publish(.users)),
            .record(at: now, userID: "alice", notifyUser: true))
        XCTAssertEqual(
            judge(at, user: "alice", publish(.interests)),
            .record(at: now, userID: "alice", notifyUser: false))
    }

    func testADeviceOutsideThePublishsAudienceIsIgnored() {
        let at = now.timeIntervalSince1970
        XCTAssertEqual(judge(at, user: "alice", publish(.users, targetsDevice: false)), .ignore(.notTargeted))
        XCTAssertEqual(judge(at, publish(.interests, targetsDevice: false)), .ignore(.notTargeted))
        XCTAssertEqual(
            judge(at, deviceCreatedAgo: 100, publish(finishedAgo: nil, targetsDevice: false)),
            .ignore(.notTargeted), "a running publish too")
    }

    func testUnknownUnstartedAndTooOldPublishesAreIgnored() {
        let at = now.timeIntervalSince1970
        XCTAssertEqual(judge(at, nil), .ignore(.unknownPublish))
        XCTAssertEqual(judge(at, publish(started: false, finishedAgo: nil)), .ignore(.publishNotStarted))
        XCTAssertEqual(judge(at, deviceCreatedAgo: 100, publish(finishedAgo: 500)), .ignore(.deviceNewerThanPublish))
        XCTAssertEqual(
            judge(at, deviceCreatedAgo: 100, publish(finishedAgo: nil)),
            .record(at: now, userID: nil, notifyUser: false), "a running publish reaches new devices")
    }

    func testTimestampAcceptsAnyFiniteNumberAndNothingElse() {
        XCTAssertEqual(ReportingPolicy.timestamp(.int(1_764_500_000)), 1_764_500_000)
        XCTAssertEqual(ReportingPolicy.timestamp(.int(.max)), Double(Int.max))
        XCTAssertEqual(ReportingPolicy.timestamp(.double(1.5e18)), 1.5e18)
        XCTAssertNil(ReportingPolicy.timestamp(.string("1764500000")))
        XCTAssertNil(ReportingPolicy.timestamp(.null))
        XCTAssertNil(ReportingPolicy.timestamp(nil))
        XCTAssertNil(ReportingPolicy.timestamp(.double(.infinity)))
    }
}
