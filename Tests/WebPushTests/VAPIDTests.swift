import Foundation
import JSON
import JWTSigner
import WebPush
import XCTest

final class VAPIDTests: XCTestCase {
    var subject: VAPIDSubject {
        get throws { try VAPIDSubject("mailto:ops@example.com") }
    }

    func testGeneratedKeyPairReloadsFromItsPEMWithTheSamePublicKey() throws {
        let (pair, pem) = try VAPIDKeyPair.generate()
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"), "PKCS#8")
        XCTAssertEqual(pair.publicKey.count, 65)
        XCTAssertEqual(pair.publicKey[0], 0x04)
        XCTAssertEqual(pair.publicKeyBase64URL.count, 87)
        XCTAssertEqual(try VAPIDKeyPair(pem: pem).publicKeyBase64URL, pair.publicKeyBase64URL)
    }

    func testLoadsAKeyFileAndRefusesOtherCurves() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vapid-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (pair, pem) = try VAPIDKeyPair.generate()
        let file = directory.appendingPathComponent("vapid.pem")
        try pem.write(to: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(try VAPIDKeyPair(contentsOfFile: file.path).publicKey, pair.publicKey)
        // A P-384 key (openssl ecparam -name secp384r1 -genkey | openssl pkcs8 -topk8 -nocrypt).
        let p384 = """
            -----BEGIN PRIVATE KEY-----
            MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDASv3/aY0Z622aBHHdF
            qN9nRR/q7dZwMJfflUhjpblOcEIOrSe73E7LVeEVi/drHP2hZANiAARgnbPoOvzw
            Emslt91almNo/tYAbYvLP0OXuZv8b1f0wj2gZuNjaGAzv80m3EX9LI341KiFtGoD
            9hIWTvaCDvzdOnW+4MdmvXxvsfSz9Kd31gmbXGcPmYUaBfdGZd087OM=
            -----END PRIVATE KEY-----
            """
        XCTAssertThrowsError(try VAPIDKeyPair(pem: p384)) { error in
            guard case .wrongKeyType(let found)? = error as? KeyLoadError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(found, "EC P-384")
        }
        XCTAssertThrowsError(try VAPIDKeyPair(contentsOfFile: directory.appendingPathComponent("missing.pem").path))
    }

    func testTokenVerifiesWithThePublicKeyAndCarriesTheClaims() throws {
        let (pair, _) = try VAPIDKeyPair.generate()
        let jwt = try VAPIDToken.make(
            audience: "https://fcm.googleapis.com", subject: try subject, expiresAt: 1_700_043_200,
            key: pair.privateKey)
        let verifier = JWTVerifier(
            key: .es256(try ES256PublicKey(uncompressedPoint: pair.publicKey)), expectedAlgorithm: .es256)
        let claims = try verifier.verify(jwt, now: 1_700_000_000)
        XCTAssertEqual(claims["aud"], "https://fcm.googleapis.com")
        XCTAssertEqual(claims.exp, 1_700_043_200)
        XCTAssertEqual(claims.sub, "mailto:ops@example.com")
        XCTAssertEqual(Set(claims.all.keys), ["aud", "exp", "sub"])
        let header = try JSONValue(parsing: Base64URL.decode(jwt.split(separator: ".")[0]))
        XCTAssertEqual(header, ["alg": "ES256", "typ": "JWT"])
        // Another key must not verify it.
        let other = try VAPIDKeyPair.generate().keyPair
        let stranger = JWTVerifier(
            key: .es256(try ES256PublicKey(uncompressedPoint: other.publicKey)), expectedAlgorithm: .es256)
        XCTAssertThrowsError(try stranger.verify(jwt, now: 1_700_000_000)) {
            XCTAssertEqual($0 as? JWTError, .badSignature)
        }
    }

    func testReferenceVerifierAcceptsTheAuthorizationHeader() throws {
        let (pair, _) = try VAPIDKeyPair.generate()
        let now = Int(Date().timeIntervalSince1970)
        let authorizer = VAPIDAuthorizer(keyPair: pair, subject: try subject)
        let header = try authorizer.authorization(audience: "https://updates.push.services.mozilla.com").headerValue
        XCTAssertTrue(header.hasPrefix("vapid t="))
        XCTAssertTrue(header.hasSuffix(", k=\(pair.publicKeyBase64URL)"))
        let info = try ReferenceWebPush.run(
            [
                "vapid", "--audience", "https://updates.push.services.mozilla.com",
                "--key", pair.publicKeyBase64URL,
            ], input: header)
        let claims = try XCTUnwrap(info["claims"] as? [String: Any])
        let exp = try XCTUnwrap(claims["exp"] as? Int)
        XCTAssertEqual(exp - now, 12 * 3600, accuracy: 5)
        // The reference refuses the same header for another origin and for another key.
        XCTAssertThrowsError(
            try ReferenceWebPush.run(["vapid", "--audience", "https://fcm.googleapis.com"], input: header)
        ) {
            XCTAssertTrue("\($0)".contains("aud"), "\($0)")
        }
        let other = try VAPIDKeyPair.generate().keyPair
        XCTAssertThrowsError(
            try ReferenceWebPush.run(
                [
                    "vapid", "--audience", "https://updates.push.services.mozilla.com",
                    "--key", other.publicKeyBase64URL,
                ], input: header))
    }

    func testSubjectAcceptsContactsAndRefusesPlaceholders() {
        for good in ["mailto:ops@example.com", "https://example.com/contact", "mailto:a.b+c@sub.example.org"] {
            XCTAssertNoThrow(try VAPIDSubject(good), good)
        }
        let bad: [(String, VAPIDSubjectError)] = [
            ("", .empty), ("ops@example.com", .unsupportedScheme), ("http://example.com", .unsupportedScheme),
            ("mailto:ops@localhost", .localhost), ("mailto:ops@example", .invalidEmail),
            ("mailto:@example.com", .invalidEmail),
            ("mailto:a@b@example.com", .invalidEmail), ("mailto:ops @example.com", .invalidCharacters),
            ("https://localhost/x", .localhost), ("https://", .invalidURL), ("mailto:x@e.com\n", .invalidCharacters),
            ("mailto:" + String(repeating: "a", count: 250) + "@e.com", .tooLong(maxBytes: 256)),
        ]
        for (text, expected) in bad {
            XCTAssertThrowsError(try VAPIDSubject(text), text) {
                XCTAssertEqual($0 as? VAPIDSubjectError, expected, text)
            }
        }
    }
}
