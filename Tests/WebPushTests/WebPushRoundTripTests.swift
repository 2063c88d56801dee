import Dispatch
import JWTSigner
import Locking
import WebPush
import XCTest

/// What Swift encrypts, the reference implementation (http_ece) decrypts with the subscriber's private key.
final class WebPushRoundTripTests: XCTestCase {
    func testReferenceDecryptsPayloadsOfEverySizeClass() throws {
        let subscriber = try TestSubscriber()
        for size in [0, 1, 41, 1000, WebPushMessage.maxPayloadSize] {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let encrypted = try WebPushEncryption.encrypt(payload, for: subscriber.subscription.keys)
            XCTAssertEqual(encrypted.body.count, WebPushEncryption.headerSize + size + 1 + 16)
            let (plaintext, info) = try ReferenceWebPush.decrypt(
                encrypted.body, subscriber: subscriber.key, auth: subscriber.auth)
            XCTAssertEqual(plaintext, payload, "size \(size)")
            XCTAssertEqual(info["rs"] as? Int, 4096)
            XCTAssertEqual(info["idlen"] as? Int, 65)
        }
    }

    /// The subscriber's parsed point is reused for every message (`WebPushSubscriberKeys.point`); the message key
    /// and salt are not.
    func testTwoMessagesToOneSubscriptionGetTheirOwnKeyAndSaltAndBothDecrypt() throws {
        let subscriber = try TestSubscriber()
        let payloads = [Array("first".utf8), Array("second".utf8)]
        let bodies = try payloads.map { try WebPushEncryption.encrypt($0, for: subscriber.subscription.keys).body }
        XCTAssertNotEqual(Array(bodies[0][0..<16]), Array(bodies[1][0..<16]), "salt reused")
        XCTAssertNotEqual(Array(bodies[0][21..<86]), Array(bodies[1][21..<86]), "sender key reused")
        for (body, payload) in zip(bodies, payloads) {
            XCTAssertEqual(
                try ReferenceWebPush.decrypt(body, subscriber: subscriber.key, auth: subscriber.auth).plaintext,
                payload)
        }
    }

    /// Messages encrypted at once on several threads for one subscription (what the encryption workers do).
    func testMessagesEncryptedConcurrentlyForOneSubscriptionAllDecrypt() throws {
        let subscriber = try TestSubscriber()
        let keys = subscriber.subscription.keys
        let bodies = Locked<[Int: [UInt8]]>([:])
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            let body = try? WebPushEncryption.encrypt(Array("message \(index)".utf8), for: keys).body
            bodies.withLock { $0[index] = body }
        }
        for index in 0..<4 {
            let body = try XCTUnwrap(bodies.withLock { $0[index] }, "message \(index) not encrypted")
            XCTAssertEqual(
                try ReferenceWebPush.decrypt(body, subscriber: subscriber.key, auth: subscriber.auth).plaintext,
                Array("message \(index)".utf8))
        }
    }

    func testMaximumPayloadMakesA4096ByteBody() throws {
        let subscriber = try TestSubscriber()
        let message = try WebPushMessage(
            payload: [UInt8](repeating: 0x41, count: WebPushMessage.maxPayloadSize), ttl: 60)
        let request = try WebPushRequest(
            subscription: subscriber.subscription, message: message,
            authorization: VAPIDAuthorization(token: "t", publicKey: "k"))
        XCTAssertEqual(request.body.count, 4096)
        XCTAssertEqual(
            try ReferenceWebPush.decrypt(request.body, subscriber: subscriber.key, auth: subscriber.auth).plaintext,
            message.payload)
    }

    func testPaddingIsStrippedByTheReceiver() throws {
        let subscriber = try TestSubscriber()
        let payload = Array(#"{"notification":{"title":"Hi"}}"#.utf8)
        let encrypted = try WebPushEncryption.encrypt(payload, for: subscriber.subscription.keys, paddingLength: 300)
        XCTAssertEqual(encrypted.body.count, 86 + payload.count + 1 + 300 + 16)
        XCTAssertEqual(
            try ReferenceWebPush.decrypt(encrypted.body, subscriber: subscriber.key, auth: subscriber.auth).plaintext,
            payload)
    }

    func testReferenceRefusesATamperedBodyAndAWrongAuthSecret() throws {
        let subscriber = try TestSubscriber()
        let encrypted = try WebPushEncryption.encrypt(Array("secret".utf8), for: subscriber.subscription.keys)
        var tampered = encrypted.body
        tampered[100] ^= 0x01
        XCTAssertThrowsError(try ReferenceWebPush.decrypt(tampered, subscriber: subscriber.key, auth: subscriber.auth))
        {
            XCTAssertEqual(($0 as? ReferenceWebPush.Failure)?.status, 2, "\($0)")
        }
        var wrongAuth = subscriber.auth
        wrongAuth[0] ^= 0xFF
        XCTAssertThrowsError(try ReferenceWebPush.decrypt(encrypted.body, subscriber: subscriber.key, auth: wrongAuth))
        {
            XCTAssertEqual(($0 as? ReferenceWebPush.Failure)?.status, 2, "\($0)")
        }
    }

    func testRefusesRecordsThatDoNotFitOneRecordOr4096Bytes() throws {
        let keys = try TestSubscriber().subscription.keys
        XCTAssertThrowsError(
            try WebPushEncryption.encrypt([UInt8](repeating: 0, count: 100), for: keys, recordSize: 100)
        ) {
            XCTAssertEqual($0 as? WebPushEncryptionError, .recordTooLarge(needed: 117, recordSize: 100))
        }
        XCTAssertThrowsError(
            try WebPushEncryption.encrypt([UInt8](repeating: 0, count: 3993), for: keys, paddingLength: 1)
        ) {
            XCTAssertEqual($0 as? WebPushEncryptionError, .bodyTooLarge(4097))
        }
        XCTAssertThrowsError(try WebPushEncryption.encrypt([1], for: keys, paddingLength: Int.max)) {
            XCTAssertEqual($0 as? WebPushEncryptionError, .bodyTooLarge(Int.max))
        }
        XCTAssertThrowsError(try WebPushEncryption.encrypt([1], for: keys, paddingLength: -1)) {
            XCTAssertEqual($0 as? WebPushEncryptionError, .invalidPadding(-1))
        }
    }
}
