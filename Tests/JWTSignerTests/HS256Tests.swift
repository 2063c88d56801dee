import Foundation
import JSON
import JWTSigner
import TestSupport
import XCTest

final class HS256Tests: XCTestCase {
    func testMatchesRFC4231TestCases() throws {
        XCTAssertEqual(
            try HS256.authenticationCode(Array("Hi There".utf8), key: [UInt8](repeating: 0x0B, count: 20)).hex,
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        XCTAssertEqual(
            try HS256.authenticationCode(Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)).hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    func testMatchesOpenSSLCommandLineHMACForShortAndLongKeys() throws {
        // 200 bytes is longer than SHA-256's 64-byte block, so HMAC must hash the key first.
        for key in [Array("k".utf8), [UInt8](repeating: 0x61, count: 200)] {
            let message = Array("beams token signing input".utf8)
            let command = ["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:\(key.hex)", "-r"]
            let output = try TestKeys.runOpenSSL(command, input: Data(message))
            let expected = String(decoding: output, as: UTF8.self).split(separator: " ")[0]
            XCTAssertEqual(try HS256.authenticationCode(message, key: key).hex, String(expected))
        }
    }

    func testEmptyKeyWorks() throws {
        // The openssl CLI refuses an empty HMAC key; expected value from Python: hmac.new(b"", msg, sha256).
        XCTAssertEqual(
            try HS256.authenticationCode(Array("beams token signing input".utf8), key: []).hex,
            "fdce111034763c67845bf4260d76dc079f34bc313b40319b4afa0e823879f632")
    }

    func testTokenHasBeamsHeaderAndSortedCompactClaims() throws {
        let claims: [String: JSONValue] = [
            "sub": "alice", "iss": "https://x.pushnotifications.pusher.com", "exp": 1_700_000_000,
        ]
        let token = try HS256.sign(claims: claims, secret: "s3cret")
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(String(decoding: try Base64URL.decode(parts[0]), as: UTF8.self), #"{"alg":"HS256","typ":"JWT"}"#)
        XCTAssertEqual(
            String(decoding: try Base64URL.decode(parts[1]), as: UTF8.self),
            #"{"exp":1700000000,"iss":"https://x.pushnotifications.pusher.com","sub":"alice"}"#)
    }

    func testSignedTokenVerifiesAndReturnsClaims() throws {
        let claims: [String: JSONValue] = [
            "sub": "alice", "iss": "issuer", "exp": 2_000, "iat": 1_000, "custom": [1, 2],
        ]
        let token = try HS256.sign(claims: claims, secret: "s3cret")
        let verified = try JWTVerifier.verify(
            token, key: .hs256(secret: "s3cret"), expectedAlgorithm: .hs256, now: 1_500)
        XCTAssertEqual(verified.sub, "alice")
        XCTAssertEqual(verified.iss, "issuer")
        XCTAssertEqual(verified.exp, 2_000)
        XCTAssertEqual(verified.iat, 1_000)
        XCTAssertNil(verified.nbf)
        XCTAssertEqual(verified["custom"], [1, 2])
    }

    func testPythonStandardLibraryAcceptsOurHS256Token() throws {
        let token = try HS256.sign(claims: ["sub": "bob", "exp": 4_707_992_302], secret: "instance-secret")
        let script = """
            import base64, hashlib, hmac, json
            token, secret = sys.argv[1], sys.argv[2].encode()
            header, claims, signature = token.split(".")
            def b64(text): return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            expected = hmac.new(secret, (header + "." + claims).encode(), hashlib.sha256).digest()
            print(hmac.compare_digest(expected, b64(signature)), json.loads(b64(claims))["sub"])
            """
        XCTAssertEqual(try TestPython.run(script, [token, "instance-secret"]), "True bob\n")
    }

    func testIsValidRejectsWrongLengthAndWrongMAC() throws {
        let message = Array("m".utf8)
        let mac = try HS256.authenticationCode(message, key: [1])
        XCTAssertTrue(HS256.isValid(signature: mac, message: message, key: [1]))
        XCTAssertFalse(HS256.isValid(signature: Array(mac.dropLast()), message: message, key: [1]))
        var wrong = mac
        wrong[31] ^= 0x80
        XCTAssertFalse(HS256.isValid(signature: wrong, message: message, key: [1]))
        XCTAssertFalse(HS256.isValid(signature: mac, message: message, key: [2]))
    }
}
