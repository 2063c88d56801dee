import JWTSigner
import TestSupport
import XCTest

/// Every way a token is refused, one test each. HS256 unless the case is about ES256.
final class JWTVerifierTests: XCTestCase {
    private let secret: [UInt8] = Array("instance-secret".utf8)
    private let hs256Header = #"{"alg":"HS256","typ":"JWT"}"#
    private let now = 1_700_000_000

    private func verify(_ token: String, now: Int? = nil, leeway: Int = 0) throws(JWTError) -> JWTClaims {
        try JWTVerifier.verify(
            token, key: .hs256(key: secret), expectedAlgorithm: .hs256, now: now ?? self.now, leeway: leeway)
    }

    private func token(claims: String, header: String? = nil) throws -> String {
        try TokenForge.hs256(header: header ?? hs256Header, claims: claims, key: secret)
    }

    private func validToken() throws -> String {
        try HS256.sign(claims: ["sub": "alice", "iss": "issuer", "exp": .int(now + 60)], key: secret)
    }

    // MARK: Accepted

    func testAcceptsValidToken() throws {
        let claims = try verify(try validToken())
        XCTAssertEqual(claims.sub, "alice")
        XCTAssertEqual(claims.exp, now + 60)
    }

    func testVerifierValueUsesItsConfiguredKeyAndLeeway() throws {
        let verifier = JWTVerifier(key: .hs256(key: secret), expectedAlgorithm: .hs256, leeway: 120)
        XCTAssertEqual(try verifier.verify(try validToken(), now: now + 150).sub, "alice")
        XCTAssertThrowsError(
            try verifier.verify(try validToken(), now: now + 181), equals: .expired(exp: now + 60, now: now + 181))
    }

    func testMissingClaimsAreNilAndListedByMissing() throws {
        let claims = try verify(try token(claims: #"{"sub":"alice"}"#))
        XCTAssertNil(claims.iss)
        XCTAssertNil(claims.exp)
        XCTAssertEqual(claims.missing(["sub", "iss", "exp"]), ["iss", "exp"])
    }

    func testAcceptsIntegralFloatExp() throws {
        XCTAssertEqual(try verify(try token(claims: #"{"exp":1.8e9}"#)).exp, 1_800_000_000)
    }

    // MARK: Malformed

    func testRejectsTokenWithTwoSegments() {
        XCTAssertThrowsError(try verify("eyJhbGciOiJIUzI1NiJ9.e30"), equals: .malformed(.segmentCount(2)))
    }

    func testRejectsTokenWithFourSegments() throws {
        XCTAssertThrowsError(try verify(try validToken() + ".e30"), equals: .malformed(.segmentCount(4)))
    }

    func testRejectsEmptyToken() {
        XCTAssertThrowsError(try verify(""), equals: .malformed(.segmentCount(1)))
    }

    func testRejectsInvalidBase64URLInHeader() throws {
        let parts = try validToken().split(separator: ".")
        XCTAssertThrowsError(
            try verify("eyJ+" + "." + parts[1] + "." + parts[2]),
            equals: .malformed(.invalidBase64URL(.header, .invalidCharacter(offset: 3))))
    }

    func testRejectsPaddedSignature() throws {
        let parts = try validToken().split(separator: ".")
        XCTAssertThrowsError(
            try verify(parts[0] + "." + parts[1] + "." + parts[2] + "="),
            equals: .malformed(.invalidBase64URL(.signature, .invalidCharacter(offset: 43))))
    }

    func testRejectsImpossibleLengthClaimsSegment() throws {
        let parts = try validToken().split(separator: ".")
        XCTAssertThrowsError(
            try verify(parts[0] + ".e30xx." + parts[2]),
            equals: .malformed(.invalidBase64URL(.claims, .impossibleLength(5))))
    }

    func testRejectsHeaderThatIsNotJSON() throws {
        XCTAssertThrowsError(try verify(try token(claims: "{}", header: "not json"))) { error in
            guard case .malformed(.notJSONObject(.header, .some))? = error as? JWTError else {
                return XCTFail("\(error)")
            }
        }
    }

    func testRejectsHeaderThatIsAJSONArray() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: "{}", header: #"["HS256"]"#)), equals: .malformed(.notJSONObject(.header, nil))
        )
    }

    func testRejectsClaimsThatAreNotJSON() throws {
        XCTAssertThrowsError(try verify(try token(claims: "sub=alice"))) { error in
            guard case .malformed(.notJSONObject(.claims, .some))? = error as? JWTError else {
                return XCTFail("\(error)")
            }
        }
    }

    func testRejectsClaimsThatAreAJSONString() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: #""alice""#)), equals: .malformed(.notJSONObject(.claims, nil)))
    }

    func testRejectsDuplicateClaimNames() throws {
        XCTAssertThrowsError(try verify(try token(claims: #"{"sub":"alice","sub":"mallory"}"#))) { error in
            guard case .malformed(.notJSONObject(.claims, let parseError?))? = error as? JWTError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(parseError.reason, #"duplicate key "sub""#)
        }
    }

    func testRejectsHeaderWithoutAlg() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: "{}", header: #"{"typ":"JWT"}"#)), equals: .malformed(.missingAlgorithm))
    }

    func testRejectsNonStringAlg() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: "{}", header: #"{"alg":256}"#)), equals: .malformed(.missingAlgorithm))
    }

    func testRejectsCriticalHeaderExtensions() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: "{}", header: #"{"alg":"HS256","crit":["exp"]}"#)),
            equals: .malformed(.criticalHeader))
    }

    // MARK: Algorithms

    func testRejectsAlgNoneWithEmptySignature() {
        let unsigned = Base64URL.encode(#"{"alg":"none"}"#) + "." + Base64URL.encode(#"{"sub":"admin"}"#) + "."
        XCTAssertThrowsError(try verify(unsigned), equals: .unsupportedAlgorithm("none"))
    }

    func testRejectsAlgNoneEvenWithAValidMAC() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: #"{"sub":"admin"}"#, header: #"{"alg":"none"}"#)),
            equals: .unsupportedAlgorithm("none"))
    }

    func testRejectsRS256Token() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: "{}", header: #"{"alg":"RS256"}"#)), equals: .unsupportedAlgorithm("RS256"))
    }

    func testRejectsAlgNameInWrongCase() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: "{}", header: #"{"alg":"hs256"}"#)), equals: .unsupportedAlgorithm("hs256"))
    }

    func testRejectsES256TokenWhereHS256IsExpected() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let esToken = try APNsProviderToken.make(
            keyID: "K", teamID: "T", issuedAt: now, key: try ES256PrivateKey(pem: pair.privateKeyPEM))
        XCTAssertThrowsError(try verify(esToken), equals: .unexpectedAlgorithm(expected: .hs256, found: .es256))
    }

    /// The classic confusion: an attacker HMACs a token with the (public) ES256 key's PEM as the secret and hopes
    /// the verifier lets the token's `alg` pick HMAC.
    func testRejectsHS256TokenKeyedWithThePublicKeyWhereES256IsExpected() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let forged = try TokenForge.hs256(
            header: hs256Header, claims: #"{"iss":"TEAM","iat":1}"#, key: Array(pair.publicKeyPEM.utf8))
        let publicKey = try ES256PublicKey(pem: pair.publicKeyPEM)
        XCTAssertThrowsError(
            try JWTVerifier.verify(forged, key: .es256(publicKey), expectedAlgorithm: .es256, now: now),
            equals: .unexpectedAlgorithm(expected: .es256, found: .hs256))
    }

    func testRejectsKeyOfWrongKindForExpectedAlgorithm() throws {
        XCTAssertThrowsError(
            try JWTVerifier.verify(try validToken(), key: .hs256(key: secret), expectedAlgorithm: .es256, now: now),
            equals: .keyDoesNotMatchAlgorithm(.es256))
    }

    // MARK: Signatures

    func testRejectsTamperedClaims() throws {
        let parts = try validToken().split(separator: ".")
        let tampered = Base64URL.encode(#"{"sub":"mallory","iss":"issuer","exp":9999999999}"#)
        XCTAssertThrowsError(try verify(parts[0] + "." + tampered + "." + parts[2]), equals: .badSignature)
    }

    func testRejectsTokenSignedWithAnotherSecret() throws {
        let other = try HS256.sign(claims: ["sub": "alice"], secret: "other-secret")
        XCTAssertThrowsError(try verify(other), equals: .badSignature)
    }

    func testRejectsTruncatedSignature() throws {
        let token = try validToken()
        XCTAssertThrowsError(try verify(String(token.dropLast(3))), equals: .badSignature)
    }

    func testRejectsEmptySignature() throws {
        let parts = try validToken().split(separator: ".")
        XCTAssertThrowsError(try verify(parts[0] + "." + parts[1] + "."), equals: .badSignature)
    }

    func testRejectsES256TokenSignedByAnotherKey() throws {
        let signer = try TestKeys.makeP256()
        let other = try TestKeys.makeP256()
        defer { TestKeys.remove(signer); TestKeys.remove(other) }
        let signingKey = try ES256PrivateKey(pem: signer.privateKeyPEM)
        let esToken = try APNsProviderToken.make(keyID: "K", teamID: "T", issuedAt: now, key: signingKey)
        let otherKey = try ES256PublicKey(pem: other.publicKeyPEM)
        XCTAssertThrowsError(
            try JWTVerifier.verify(esToken, key: .es256(otherKey), expectedAlgorithm: .es256, now: now),
            equals: .badSignature)
    }

    // MARK: Claim types

    func testRejectsStringExp() throws {
        XCTAssertThrowsError(try verify(try token(claims: #"{"exp":"1700000060"}"#)), equals: .invalidClaim("exp"))
    }

    func testRejectsFractionalExp() throws {
        XCTAssertThrowsError(try verify(try token(claims: #"{"exp":1700000060.5}"#)), equals: .invalidClaim("exp"))
    }

    func testRejectsExpBeyondIntegerRange() throws {
        XCTAssertThrowsError(try verify(try token(claims: #"{"exp":1e300}"#)), equals: .invalidClaim("exp"))
    }

    func testRejectsBooleanIat() throws {
        XCTAssertThrowsError(try verify(try token(claims: #"{"iat":true}"#)), equals: .invalidClaim("iat"))
    }

    func testRejectsNullNbf() throws {
        XCTAssertThrowsError(try verify(try token(claims: #"{"nbf":null}"#)), equals: .invalidClaim("nbf"))
    }

    func testRejectsNumericSub() throws {
        XCTAssertThrowsError(try verify(try token(claims: #"{"sub":42}"#)), equals: .invalidClaim("sub"))
    }

    func testRejectsArrayIss() throws {
        XCTAssertThrowsError(try verify(try token(claims: #"{"iss":["a"]}"#)), equals: .invalidClaim("iss"))
    }

    func testTimeClaimsAtTheEndsOfTheIntegerRangeAreComparedWithoutOverflow() throws {
        // Claim values are never added to: a huge `exp` cannot overflow past `now`, a huge negative `iat` cannot
        // wrap into the future.
        let farFuture = try token(
            claims: #"{"exp":9223372036854775807,"iat":-9223372036854775808,"nbf":-9223372036854775808}"#)
        XCTAssertEqual(try verify(farFuture, leeway: 120).exp, .max)
        XCTAssertThrowsError(
            try verify(try token(claims: #"{"exp":-9223372036854775808}"#), leeway: 120),
            equals: .expired(exp: .min, now: now))
        XCTAssertThrowsError(
            try verify(try token(claims: #"{"iat":9223372036854775807}"#), leeway: 120),
            equals: .usedBeforeIssued(iat: .max, now: now))
        XCTAssertThrowsError(
            try verify(try token(claims: #"{"nbf":9223372036854775807}"#), leeway: 120),
            equals: .notYetValid(nbf: .max, now: now))
    }

    // MARK: Time

    func testRejectsExpiredToken() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: #"{"exp":1699999999}"#)), equals: .expired(exp: 1_699_999_999, now: now))
    }

    func testAcceptsTokenExpiringExactlyNow() throws {
        XCTAssertEqual(try verify(try token(claims: #"{"exp":1700000000}"#)).exp, now)
    }

    func testAcceptsExpiredTokenWithinLeeway() throws {
        XCTAssertNoThrow(try verify(try token(claims: #"{"exp":1699999940}"#), leeway: 60))
        XCTAssertThrowsError(
            try verify(try token(claims: #"{"exp":1699999939}"#), leeway: 60),
            equals: .expired(exp: 1_699_999_939, now: now))
    }

    func testHugeExpDoesNotOverflow() throws {
        XCTAssertEqual(try verify(try token(claims: #"{"exp":9223372036854775807}"#), leeway: 60).exp, Int.max)
    }

    func testRejectsTokenUsedBeforeIssued() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: #"{"iat":1700000001}"#)),
            equals: .usedBeforeIssued(iat: 1_700_000_001, now: now))
    }

    func testAcceptsFutureIatWithinLeeway() throws {
        XCTAssertNoThrow(try verify(try token(claims: #"{"iat":1700000030}"#), leeway: 30))
        XCTAssertThrowsError(
            try verify(try token(claims: #"{"iat":1700000031}"#), leeway: 30),
            equals: .usedBeforeIssued(iat: 1_700_000_031, now: now))
    }

    func testRejectsTokenNotYetValid() throws {
        XCTAssertThrowsError(
            try verify(try token(claims: #"{"nbf":1700000100}"#)), equals: .notYetValid(nbf: 1_700_000_100, now: now))
    }

    func testAcceptsNbfReachedWithinLeeway() throws {
        XCTAssertNoThrow(try verify(try token(claims: #"{"nbf":1700000100}"#), leeway: 100))
    }

    func testSignatureIsCheckedBeforeTimeClaims() throws {
        // An expired token with a bad signature reports the signature: time claims of a forgery mean nothing.
        let expired = try TokenForge.hs256(header: hs256Header, claims: #"{"exp":1}"#, key: Array("wrong".utf8))
        XCTAssertThrowsError(try verify(expired), equals: .badSignature)
    }

    func testErrorDescriptionsAreStable() {
        XCTAssertEqual(JWTError.usedBeforeIssued(iat: 2, now: 1).description, "token used before issued")
        XCTAssertEqual(
            JWTError.unexpectedAlgorithm(expected: .hs256, found: .es256).description,
            "expected algorithm HS256, token uses ES256")
    }
}
