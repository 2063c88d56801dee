import BeamsModel
import JWTSigner
import PushStore
import XCTest

@testable import PublishEngine
@testable import PushServer

final class SupportTests: XCTestCase {
    func testConstantTimeEqualsComparesContentAndLength() {
        XCTAssertTrue(ConstantTime.equals("secret-value", "secret-value"))
        XCTAssertFalse(ConstantTime.equals("secret-valuf", "secret-value"))
        XCTAssertFalse(ConstantTime.equals("secret-value-longer", "secret-value"))
        XCTAssertFalse(ConstantTime.equals("secret", "secret-value"))
        XCTAssertFalse(ConstantTime.equals("", "secret"))
        XCTAssertFalse(ConstantTime.equals("", ""), "an empty secret never matches")
    }

    func testWebhookRetriesFollowBeamsScheduleThenGiveUp() {
        let now = Date(timeIntervalSince1970: 0)
        XCTAssertEqual(
            WebhookOutbox.nextOutcome(attempts: 0, error: "e", now: now),
            .retry(at: now.addingTimeInterval(10), error: "e"))
        XCTAssertEqual(
            WebhookOutbox.nextOutcome(attempts: 3, error: "e", now: now),
            .retry(at: now.addingTimeInterval(300), error: "e"))
        XCTAssertEqual(WebhookOutbox.nextOutcome(attempts: 4, error: "e", now: now), .gaveUp(error: "e"))
    }

    func testHMACSHA1MatchesRFC2202() throws {
        // RFC 2202 test case 2: key "Jefe", data "what do ya want for nothing?".
        XCTAssertEqual(
            try HMACSHA1.hex(Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
    }

    func testPublishPlanRoundTripsThroughTheStoreFormat() throws {
        let request = try PublishRequest.parse(
            Array(
                #"{"interests":["a"],"web":{},"apns":{"aps":{"alert":"x"},"priority":5,"collapse_id":"c","expiration":99,"push_type":"alert"}}"#
                    .utf8), kind: .interests)
        let plan = try PublishPlan(request: request, body: Array("{}".utf8), instanceID: "i", publishID: "p")
        let decoded = try PublishPlan(decoding: plan.encoded())
        XCTAssertEqual(decoded, plan)
        XCTAssertEqual(decoded.platforms, ["apns", "web"])
        XCTAssertEqual(decoded.priority, 5)
        XCTAssertThrowsError(try PublishPlan(decoding: Data(#"{"v":99}"#.utf8)))
    }

    func testBackgroundPushWithPriorityTenIsSentWithFive() throws {
        let request = try PublishRequest.parse(
            Array(#"{"interests":["a"],"apns":{"data":{"k":1},"priority":10}}"#.utf8), kind: .interests)
        let plan = try PublishPlan(request: request, body: [], instanceID: "i", publishID: "p")
        let template = RequestTemplate(plan: plan, payload: try XCTUnwrap(plan.apnsPayload), topic: "com.example")
        XCTAssertEqual(template.priority?.rawValue, 5, "only content-available: Apple rejects priority 10")
    }
}
