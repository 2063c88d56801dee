import JWTSigner
import PublishEngine
import WebPush
import XCTest

/// The per-instance cache of parsed Web Push subscriptions: one parse per stored token while it is kept, bounded.
final class WebPushSubscriptionsTests: XCTestCase {
    /// A canonical stored token (`DeviceToken.web`'s form) for a fresh subscriber key.
    private func token(_ n: Int) throws -> String {
        let point = try P256KeyPair.generate().publicPoint
        let auth = Array(repeating: UInt8(n & 0xFF), count: 16)
        return
            #"{"endpoint":"https://push.example.net/s/\#(n)","keys":{"auth":"\#(Base64URL.encode(auth))","p256dh":"\#(Base64URL.encode(point))"}}"#
    }

    func testARepeatedTokenIsParsedOnceAndGivesTheSameKeys() throws {
        let subscriptions = WebPushSubscriptions(capacity: 4)
        let stored = try token(1)
        let first = try XCTUnwrap(subscriptions.subscription(stored))
        let second = try XCTUnwrap(subscriptions.subscription(stored))
        XCTAssertNotNil(first.keys.point)
        XCTAssertTrue(first.keys.point === second.keys.point, "the second lookup reuses the parsed key")
        XCTAssertEqual(first.endpoint.text, "https://push.example.net/s/1")
        XCTAssertEqual(subscriptions.count, 1)
    }

    func testADamagedTokenIsNilAndNotKept() {
        let subscriptions = WebPushSubscriptions(capacity: 4)
        XCTAssertNil(subscriptions.subscription(#"{"endpoint":"https://push.example.net/s","keys":{}}"#))
        XCTAssertNil(subscriptions.subscription("not json"))
        XCTAssertEqual(subscriptions.count, 0)
    }

    func testHoldsAtMostTwoGenerationsAndKeepsWhatIsStillUsed() throws {
        let subscriptions = WebPushSubscriptions(capacity: 3)
        let tokens = try (0..<10).map(token)
        let hot = try XCTUnwrap(subscriptions.subscription(tokens[0]))
        for stored in tokens.dropFirst() {
            _ = subscriptions.subscription(stored)
            XCTAssertLessThanOrEqual(subscriptions.count, 6)
            // Used by every "publish": never dropped, always the same parsed value.
            XCTAssertTrue(subscriptions.subscription(tokens[0])?.keys.point === hot.keys.point)
        }
        // The coldest are gone: looking one up parses it again (a new key object).
        let cold = try XCTUnwrap(subscriptions.subscription(tokens[1]))
        XCTAssertEqual(cold.endpoint.text, "https://push.example.net/s/1")
    }
}
