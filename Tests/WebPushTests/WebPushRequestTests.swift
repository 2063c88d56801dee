import JWTSigner
import WebPush
import XCTest

final class WebPushRequestTests: XCTestCase {
    func testRequestCarriesRFC8030HeadersVAPIDAndTheEncryptedBody() throws {
        let subscriber = try TestSubscriber(endpoint: "https://updates.push.services.mozilla.com/wpush/v2/gAAAA")
        let (pair, _) = try VAPIDKeyPair.generate()
        let vapid = VAPIDAuthorizer(keyPair: pair, subject: try VAPIDSubject("mailto:ops@example.com"))
        let message = try WebPushMessage(
            payload: Array(#"{"notification":{"title":"Hi"}}"#.utf8), ttl: 3600,
            urgency: .high, topic: "news_1")
        let request = try WebPushRequest(subscription: subscriber.subscription, message: message, vapid: vapid)
        XCTAssertEqual(request.url, "https://updates.push.services.mozilla.com/wpush/v2/gAAAA")
        let authorization = try vapid.authorization(audience: "https://updates.push.services.mozilla.com")
        XCTAssertEqual(
            request.headers,
            [
                WebPushHeader(name: "TTL", value: "3600"),
                WebPushHeader(name: "Content-Encoding", value: "aes128gcm"),
                WebPushHeader(name: "Content-Type", value: "application/octet-stream"),
                WebPushHeader(name: "Authorization", value: authorization.headerValue),
                WebPushHeader(name: "Urgency", value: "high"),
                WebPushHeader(name: "Topic", value: "news_1"),
            ])
        XCTAssertEqual(
            try ReferenceWebPush.decrypt(request.body, subscriber: subscriber.key, auth: subscriber.auth).plaintext,
            message.payload)
        _ = try ReferenceWebPush.run(
            ["vapid", "--audience", subscriber.subscription.audience, "--key", pair.publicKeyBase64URL],
            input: authorization.headerValue)
    }

    func testOptionalHeadersAreOmittedWhenUnset() throws {
        let subscriber = try TestSubscriber()
        let request = try WebPushRequest(
            subscription: subscriber.subscription, message: WebPushMessage(payload: [1], ttl: 0),
            authorization: VAPIDAuthorization(token: "t", publicKey: "k"))
        XCTAssertEqual(request.headers.map(\.name), ["TTL", "Content-Encoding", "Content-Type", "Authorization"])
        XCTAssertEqual(request.headers[0].value, "0")
        XCTAssertEqual(request.headers[3].description, "Authorization: vapid t=t, k=k")
    }

    func testMessageLimits() {
        XCTAssertThrowsError(try WebPushMessage(payload: [UInt8](repeating: 0, count: 3994), ttl: 60)) {
            XCTAssertEqual($0 as? WebPushMessageError, .payloadTooLarge(size: 3994, maxBytes: 3993))
        }
        XCTAssertNoThrow(try WebPushMessage(payload: [UInt8](repeating: 0, count: 3993), ttl: 2_419_200))
        for ttl in [-1, 2_419_201, Int.max, Int.min] {
            XCTAssertThrowsError(try WebPushMessage(payload: [], ttl: ttl)) {
                XCTAssertEqual($0 as? WebPushMessageError, .invalidTTL(ttl))
            }
        }
        for topic in ["", String(repeating: "a", count: 33), "has space", "a/b", "é", "a=b"] {
            XCTAssertThrowsError(try WebPushMessage(payload: [], ttl: 1, topic: topic), topic) {
                XCTAssertEqual($0 as? WebPushMessageError, .invalidTopic)
            }
        }
        XCTAssertNoThrow(try WebPushMessage(payload: [], ttl: 1, topic: String(repeating: "Z", count: 32)))
        XCTAssertEqual(WebPushUrgency.allCases.map(\.rawValue), ["very-low", "low", "normal", "high"])
    }
}
