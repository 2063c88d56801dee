import JWTSigner
import WebPush
import XCTest

/// RFC 8291 Appendix A, every intermediate value and the final body, with the sender key and salt injected.
final class RFC8291VectorTests: XCTestCase {
    let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
    let asPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    let asPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    let uaPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
    let uaPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
    let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    let ecdhSecret = "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs"
    let body =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK"
        + "6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    func testSenderKeyFromPrivateScalarHasTheVectorsPublicKey() throws {
        XCTAssertEqual(try P256KeyPair(privateScalar: b64(asPrivate)).publicPoint, b64(asPublic))
        XCTAssertEqual(try P256KeyPair(privateScalar: b64(uaPrivate)).publicPoint, b64(uaPublic))
    }

    func testECDHSecretMatchesFromBothSides() throws {
        let sender = try P256KeyPair(privateScalar: b64(asPrivate))
        let receiver = try P256KeyPair(privateScalar: b64(uaPrivate))
        XCTAssertEqual(try sender.sharedSecret(with: ES256PublicKey(uncompressedPoint: b64(uaPublic))), b64(ecdhSecret))
        XCTAssertEqual(
            try receiver.sharedSecret(with: ES256PublicKey(uncompressedPoint: b64(asPublic))), b64(ecdhSecret))
    }

    func testKeyScheduleMatchesEveryIntermediate() throws {
        let schedule = try WebPushKeySchedule(
            ecdhSecret: b64(ecdhSecret), authSecret: b64(authSecret),
            subscriberPoint: b64(uaPublic), senderPoint: b64(asPublic), salt: b64(salt))
        XCTAssertEqual(schedule.authPseudorandomKey, b64("Snr3JMxaHVDXHWJn5wdC52WjpCtd2EIEGBykDcZW32k"))
        XCTAssertEqual(schedule.inputKeyMaterial, b64("S4lYMb_L0FxCeq0WhDx813KgSYqU26kOyzWUdsXYyrg"))
        XCTAssertEqual(schedule.pseudorandomKey, b64("09_eUZGrsvxChDCGRCdkLiDXrReGOEVeSCdCcPBSJSc"))
        XCTAssertEqual(schedule.contentEncryptionKey, b64("oIhVW04MRdy2XN9CiKLxTg"))
        XCTAssertEqual(schedule.nonce, b64("4h_95klXJ5E_qnoN"))
    }

    func testEncryptedBodyIsTheVectorByteForByte() throws {
        let keys = try WebPushSubscriberKeys(p256dh: b64(uaPublic), auth: b64(authSecret))
        let encrypted = try WebPushEncryption.encrypt(
            plaintext, for: keys, senderKey: P256KeyPair(privateScalar: b64(asPrivate)),
            salt: b64(salt))
        XCTAssertEqual(encrypted.body.count, 144)
        XCTAssertEqual(Base64URL.encode(encrypted.body), body)
        XCTAssertEqual(encrypted.headers, [WebPushHeader(name: "Content-Encoding", value: "aes128gcm")])
    }

    func testReferenceImplementationDecryptsTheVectorBody() throws {
        let info = try ReferenceWebPush.run(
            ["decrypt", "--private-scalar", uaPrivate, "--auth", authSecret], input: body)
        XCTAssertEqual(try Base64URL.decode(info["plaintext"] as? String ?? "?"), plaintext)
    }

    func testWithoutInjectionEachMessageGetsAFreshKeyAndSalt() throws {
        let keys = try WebPushSubscriberKeys(p256dh: b64(uaPublic), auth: b64(authSecret))
        let first = try WebPushEncryption.encrypt(plaintext, for: keys).body
        let second = try WebPushEncryption.encrypt(plaintext, for: keys).body
        XCTAssertEqual(first.count, 144)
        XCTAssertNotEqual(Array(first[0..<16]), Array(second[0..<16]), "salt reused")
        XCTAssertNotEqual(Array(first[21..<86]), Array(second[21..<86]), "sender key reused")
        XCTAssertEqual(Array(first[16..<21]), [0, 0, 0x10, 0, 65], "rs 4096 and idlen 65")
    }

    func testRejectsWrongSaltLengthAndScalarLength() throws {
        let keys = try WebPushSubscriberKeys(p256dh: b64(uaPublic), auth: b64(authSecret))
        XCTAssertThrowsError(try WebPushEncryption.encrypt(plaintext, for: keys, salt: [1, 2, 3])) {
            XCTAssertEqual($0 as? WebPushEncryptionError, .invalidSaltLength(3))
        }
        XCTAssertThrowsError(try P256KeyPair(privateScalar: [1, 2, 3]))
        // The scalar 0 is not a valid private key: OpenSSL's decoder refuses it with its own message.
        XCTAssertThrowsError(try P256KeyPair(privateScalar: [UInt8](repeating: 0, count: 32))) { error in
            XCTAssertFalse((error as? CryptoError)?.messages.isEmpty ?? true, "\(error)")
        }
    }
}
