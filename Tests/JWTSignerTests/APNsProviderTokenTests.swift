import JWTSigner
import TestSupport
import XCTest

final class APNsProviderTokenTests: XCTestCase {
    func testHeaderHasAlgAndKidAndClaimsHaveIssAndNumericIat() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        let token = try APNsProviderToken.make(
            keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_700_000_000, key: key)

        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(
            String(decoding: try Base64URL.decode(parts[0]), as: UTF8.self), #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        XCTAssertEqual(
            String(decoding: try Base64URL.decode(parts[1]), as: UTF8.self), #"{"iss":"DEF123GHIJ","iat":1700000000}"#)

        let header = try TokenForge.object(token, segment: 0)
        let claims = try TokenForge.object(token, segment: 1)
        XCTAssertEqual(header, ["alg": "ES256", "kid": "ABC123DEFG"])
        XCTAssertEqual(claims["iat"], .int(1_700_000_000), "iat must be a JSON number, never a string")
        XCTAssertNil(claims["kid"], "kid belongs in the header only")
        XCTAssertEqual(claims, ["iss": "DEF123GHIJ", "iat": 1_700_000_000])
        XCTAssertEqual(try Base64URL.decode(parts[2]).count, 64)
    }

    func testTokenVerifiesAsES256WithThePublicKey() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        let token = try APNsProviderToken.make(keyID: "KEY", teamID: "TEAM", issuedAt: 1_000, key: key)
        let publicKey = try ES256PublicKey(pem: pair.publicKeyPEM)
        let claims = try JWTVerifier.verify(token, key: .es256(publicKey), expectedAlgorithm: .es256, now: 1_000)
        XCTAssertEqual(claims.iss, "TEAM")
        XCTAssertEqual(claims.iat, 1_000)
    }

    func testIdentifiersAreJSONEscaped() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        let token = try APNsProviderToken.make(keyID: #"K"\"#, teamID: "T\n", issuedAt: 5, key: key)
        XCTAssertEqual(try TokenForge.object(token, segment: 0)["kid"], .string(#"K"\"#))
        XCTAssertEqual(try TokenForge.object(token, segment: 1)["iss"], .string("T\n"))
    }
}
