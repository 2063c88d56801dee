import Foundation
import PushStore
import XCTest

@testable import PublishEngine
@testable import PushServer

final class DeviceInvalidationWebhookTests: XCTestCase {
    func testStandardWebhookSignatureMatchesTheSpecificationExample() {
        // The example of the Standard Webhooks reference libraries: this secret, id, timestamp and body sign to this.
        let headers = WebhookOutbox.standardWebhookHeaders(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek", body: Array(#"{"test": 2432232314}"#.utf8),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", now: Date(timeIntervalSince1970: 1_614_265_330))
        XCTAssertEqual(headers["webhook-id"], "msg_p5jXN8AQM9LWM0D4loKWxJek")
        XCTAssertEqual(headers["webhook-timestamp"], "1614265330")
        XCTAssertEqual(headers["webhook-signature"], "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    func testSecretWithoutThePrefixIsUsedAsItsUTF8Bytes() {
        XCTAssertEqual(WebhookOutbox.standardWebhookKey("plain-secret"), Array("plain-secret".utf8))
        XCTAssertEqual(WebhookOutbox.standardWebhookKey("whsec_AAEC"), [0, 1, 2])
    }

    func testMaskKeepsSixCharactersOfAnAPNsTokenAndTheHostOfAWebEndpoint() {
        let apns = String(repeating: "ab", count: 32)
        XCTAssertEqual(DeviceInvalidation.mask(token: apns), "…" + String(apns.suffix(6)))
        let web =
            #"{"endpoint":"https://fcm.googleapis.com/fcm/send/abcdefghijklmnop123456","keys":{"auth":"x","p256dh":"y"}}"#
        XCTAssertEqual(DeviceInvalidation.mask(token: web), "fcm.googleapis.com/…123456")
        XCTAssertEqual(DeviceInvalidation.mask(token: "short"), "…", "a token too short to mask keeps nothing")
    }

    func testPageCursorRefusesAnythingButADecimalSequenceNumber() throws {
        XCTAssertEqual(try PageQuery(since: nil, limit: nil), try PageQuery(since: "0", limit: "100"))
        XCTAssertEqual(try PageQuery(since: "42", limit: "1000").since, 42)
        for bad in ["", "-1", "abc", "1e3", "99999999999999999999", " 1"] {
            XCTAssertThrowsError(try PageQuery(since: bad, limit: nil), bad)
        }
        for bad in ["0", "1001", "x", "-5"] {
            XCTAssertThrowsError(try PageQuery(since: nil, limit: bad), bad)
        }
    }
}
