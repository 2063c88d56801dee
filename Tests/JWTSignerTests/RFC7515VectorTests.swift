import JWTSigner
import XCTest

/// The worked examples of RFC 7515 appendix A, verified exactly as published.
final class RFC7515VectorTests: XCTestCase {
    /// A.1: header `{"typ":"JWT",\r\n "alg":"HS256"}`; claims `{"iss":"joe",\r\n "exp":1300819380,\r\n
    /// "http://example.com/is_root":true}`.
    static let hs256Token =
        "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    /// A.1's JWK `k`; base64url-decoded it is the HMAC key.
    static let hs256JWKKey = "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"

    /// A.3: header `{"alg":"ES256"}`, the same claims.
    static let es256Token =
        "eyJhbGciOiJFUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    /// A.3's JWK `x` and `y`.
    static let es256X = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
    static let es256Y = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"

    /// The example's `exp`; the token expired in 2011, so verification injects a `now` before it.
    static let exampleExp = 1_300_819_380

    func testRFC7515A1HS256ExampleVerifies() throws {
        let key = try Base64URL.decode(Self.hs256JWKKey)
        let claims = try JWTVerifier.verify(
            Self.hs256Token, key: .hs256(key: key), expectedAlgorithm: .hs256, now: Self.exampleExp - 60)
        XCTAssertEqual(claims.iss, "joe")
        XCTAssertEqual(claims.exp, Self.exampleExp)
        XCTAssertNil(claims.sub)
        XCTAssertEqual(claims["http://example.com/is_root"], .bool(true))
    }

    func testRFC7515A1ExampleIsExpiredAfterItsExp() throws {
        let key = try Base64URL.decode(Self.hs256JWKKey)
        XCTAssertThrowsError(
            try JWTVerifier.verify(
                Self.hs256Token, key: .hs256(key: key), expectedAlgorithm: .hs256, now: Self.exampleExp + 1),
            equals: .expired(exp: Self.exampleExp, now: Self.exampleExp + 1)
        )
    }

    func testRFC7515A1ExampleFailsWithAnotherKey() throws {
        var key = try Base64URL.decode(Self.hs256JWKKey)
        key[0] ^= 1
        XCTAssertThrowsError(
            try JWTVerifier.verify(
                Self.hs256Token, key: .hs256(key: key), expectedAlgorithm: .hs256, now: Self.exampleExp),
            equals: .badSignature
        )
    }

    func testRFC7515A3ES256ExampleVerifiesWithKeyBuiltFromJWKCoordinates() throws {
        let publicKey = try ES256PublicKey(x: try Base64URL.decode(Self.es256X), y: try Base64URL.decode(Self.es256Y))
        let claims = try JWTVerifier.verify(
            Self.es256Token, key: .es256(publicKey), expectedAlgorithm: .es256, now: Self.exampleExp)
        XCTAssertEqual(claims.iss, "joe")
        XCTAssertEqual(claims["http://example.com/is_root"], .bool(true))
    }

    func testRFC7515A3ExampleFailsWhenOneSignatureBitFlips() throws {
        let publicKey = try ES256PublicKey(x: try Base64URL.decode(Self.es256X), y: try Base64URL.decode(Self.es256Y))
        var parts = Self.es256Token.split(separator: ".").map(String.init)
        var signature = try Base64URL.decode(parts[2])
        signature[10] ^= 1
        parts[2] = Base64URL.encode(signature)
        XCTAssertThrowsError(
            try JWTVerifier.verify(
                parts.joined(separator: "."), key: .es256(publicKey), expectedAlgorithm: .es256, now: Self.exampleExp),
            equals: .badSignature
        )
    }
}
