import JWTSigner
import WebPush
import XCTest

/// Subscriptions come from anonymous browsers: every malformed field is refused with the field named.
final class WebPushSubscriptionTests: XCTestCase {
    let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    let endpoint = "https://fcm.googleapis.com/fcm/send/dXYz:APA91b"

    func testAcceptsABrowserSubscriptionAndDerivesTheAudience() throws {
        let subscription = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
        XCTAssertEqual(subscription.audience, "https://fcm.googleapis.com")
        XCTAssertEqual(subscription.endpoint.text, endpoint)
        XCTAssertEqual(subscription.keys.publicPoint, b64(p256dh))
        XCTAssertEqual(subscription.keys.authSecret, b64(auth))
        let local = try WebPushSubscription(endpoint: "https://127.0.0.1:8443/push/1", p256dh: p256dh, auth: auth)
        XCTAssertEqual(local.audience, "https://127.0.0.1:8443")
        let upper = try WebPushSubscription(endpoint: "https://Web.Push.Apple.com:443/QA", p256dh: p256dh, auth: auth)
        XCTAssertEqual(upper.audience, "https://web.push.apple.com")
    }

    func testToleratesBase64Padding() throws {
        let subscription = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh + "=", auth: auth + "==")
        XCTAssertEqual(subscription.keys.authSecret, b64(auth))
    }

    func testRejectsHostileEndpoints() {
        let cases: [(String, WebPushSubscriptionError)] = [
            ("http://fcm.googleapis.com/fcm/send/x", .endpointNotHTTPS),
            ("ftp://fcm.googleapis.com/x", .endpointNotHTTPS),
            ("javascript:alert(1)", .endpointNotHTTPS),
            ("https://user:pass@fcm.googleapis.com/x", .endpointHasCredentials),
            ("https://evil.example@fcm.googleapis.com/x", .endpointHasCredentials),
            ("https://fcm.googleapis.com/x#frag", .endpointHasFragment),
            ("https://fcm.googleapis.com/x y", .endpointHasInvalidCharacters),
            ("https://fcm.googleapis.com/x\r\nHost: evil", .endpointHasInvalidCharacters),
            ("https://fcm.googleapis.com/ü", .endpointHasInvalidCharacters),
            ("", .invalidEndpoint("is not a valid URL (Malformed input to a URL function)")),
            ("https://" + String(repeating: "a", count: 2100), .tooLong(.endpoint, maxBytes: 2048)),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try WebPushSubscription(endpoint: text, p256dh: p256dh, auth: auth), text) { error in
                guard let error = error as? WebPushSubscriptionError else { return XCTFail("\(error)") }
                if case .invalidEndpoint = expected, case .invalidEndpoint = error { return }
                XCTAssertEqual(error, expected, text)
            }
        }
        XCTAssertThrowsError(try WebPushSubscription(endpoint: "https://[::1/x", p256dh: p256dh, auth: auth)) {
            guard case .invalidEndpoint? = $0 as? WebPushSubscriptionError else { return XCTFail("\($0)") }
        }
    }

    func testRejectsHostileKeys() throws {
        // (x, y) = (1, 1) is not on P-256; a compressed point (0x02 ‖ x) is not what RFC 8291 sends.
        let offCurve = Base64URL.encode(
            [0x04] + [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0, count: 31) + [1])
        let compressed = Base64URL.encode(
            Array(b64(p256dh)[0..<33]).enumerated().map { $0.offset == 0 ? 0x02 : $0.element })
        let prefix02 = Base64URL.encode([0x02] + Array(b64(p256dh)[1...]))
        let cases: [(String, String, WebPushSubscriptionError)] = [
            (offCurve, auth, .notOnCurve),
            (compressed, auth, .wrongLength(.p256dh, expected: 65, found: 33)),
            (prefix02, auth, .notUncompressedPoint),
            ("", auth, .wrongLength(.p256dh, expected: 65, found: 0)),
            (p256dh + "AAAA", auth, .tooLong(.p256dh, maxBytes: 88)),
            (String(repeating: "A", count: 100_000), auth, .tooLong(.p256dh, maxBytes: 88)),
            (
                "B+Vxsr7N/eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth,
                .notBase64URL(.p256dh)
            ),
            (p256dh, "BTBZMqHH6r4Tts7J_aSI", .wrongLength(.auth, expected: 16, found: 15)),
            (p256dh, "BTBZMqHH6r4Tts7J_aSIggAA", .wrongLength(.auth, expected: 16, found: 18)),
            (p256dh, "BTBZMqHH6r4Tts7J_aSIgg=", .notBase64URL(.auth)),
            (p256dh, "BTBZMqHH 6r4Tts7J_aSIgg", .notBase64URL(.auth)),
            (p256dh, String(repeating: "A", count: 25), .tooLong(.auth, maxBytes: 24)),
        ]
        for (key, secret, expected) in cases {
            XCTAssertThrowsError(try WebPushSubscription(endpoint: endpoint, p256dh: key, auth: secret), "\(expected)")
            {
                XCTAssertEqual($0 as? WebPushSubscriptionError, expected)
            }
        }
    }

    func testErrorDescriptionsNameTheFieldWithoutEchoingInput() {
        XCTAssertEqual(
            WebPushSubscriptionError.wrongLength(.auth, expected: 16, found: 3).description,
            "auth must decode to 16 bytes, got 3")
        XCTAssertEqual(
            WebPushSubscriptionError.endpointHasCredentials.description, "endpoint must not carry credentials")
    }
}
