import FCMClient
import Foundation
import JSON
import JWTSigner
import TestSupport
import XCTest

final class AccessTokenRequestTests: XCTestCase {
    private func segments(_ token: String) throws -> (
        header: JSONValue, claims: JSONValue, input: [UInt8], signature: [UInt8]
    ) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        return (
            try JSONValue(parsing: try Base64URL.decode(parts[0])),
            try JSONValue(parsing: try Base64URL.decode(parts[1])),
            Array((parts[0] + "." + parts[1]).utf8), try Base64URL.decode(parts[2])
        )
    }

    func testAssertionCarriesGooglesHeaderAndClaimsAsIntegers() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        let request = try AccessTokenRequest(account: try fixture.account(), issuedAt: 1_700_000_000)
        let (header, claims, _, signature) = try segments(request.assertion)
        XCTAssertEqual(header, ["alg": "RS256", "typ": "JWT", "kid": .string(ServiceAccountFixture.privateKeyID)])
        XCTAssertEqual(
            claims,
            [
                "iss": .string(ServiceAccountFixture.clientEmail),
                "scope": "https://www.googleapis.com/auth/firebase.messaging",
                "aud": .string(ServiceAccountFixture.tokenURI),
                "iat": .int(1_700_000_000), "exp": .int(1_700_003_600),
            ])
        XCTAssertEqual(signature.count, 256)
        XCTAssertEqual(request.url, ServiceAccountFixture.tokenURI)
    }

    func testLifetimeIsClampedToOneHourAndAtLeastOneSecond() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        let account = try fixture.account()
        XCTAssertEqual(
            try segments(try AccessTokenRequest(account: account, issuedAt: 100, lifetime: 7200).assertion).claims[
                "exp"], 3700)
        XCTAssertEqual(
            try segments(try AccessTokenRequest(account: account, issuedAt: 100, lifetime: 600).assertion).claims[
                "exp"], 700)
        XCTAssertEqual(
            try segments(try AccessTokenRequest(account: account, issuedAt: 100, lifetime: -5).assertion).claims["exp"],
            101)
        XCTAssertEqual(
            try segments(try AccessTokenRequest(account: account, issuedAt: Int.max - 10).assertion).claims["exp"],
            .int(Int.max))
    }

    func testAssertionSignatureVerifiesWithOpenSSLCommandLineUnderTheAccountsPublicKey() throws {
        let fixture = try ServiceAccountFixture()
        let stranger = try TestKeys.makeRSA(bits: 2048)
        defer { fixture.remove(); TestKeys.remove(stranger) }
        let request = try AccessTokenRequest(account: try fixture.account(), issuedAt: 1_700_000_000)
        let (_, _, input, signature) = try segments(request.assertion)
        XCTAssertTrue(try fixture.account().privateKey.publicKey.verify(signature: signature, message: input))
        let inputPath = fixture.pair.directory + "/input.bin"
        let signaturePath = fixture.pair.directory + "/signature.bin"
        try Data(input).write(to: URL(fileURLWithPath: inputPath))
        try Data(signature).write(to: URL(fileURLWithPath: signaturePath))
        let verify = { (key: String) in
            try TestKeys.runOpenSSL(["dgst", "-sha256", "-verify", key, "-signature", signaturePath, inputPath])
        }
        XCTAssertEqual(String(decoding: try verify(fixture.pair.publicKeyPath), as: UTF8.self), "Verified OK\n")
        XCTAssertThrowsError(try verify(stranger.publicKeyPath))
    }

    func testBodyIsTheFormEncodedJWTBearerGrant() throws {
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        let request = try AccessTokenRequest(account: try fixture.account(), issuedAt: 1_700_000_000)
        XCTAssertEqual(AccessTokenRequest.contentType, "application/x-www-form-urlencoded")
        XCTAssertEqual(
            String(decoding: request.body, as: UTF8.self),
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + request.assertion)
    }

    func testHostileClientEmailStaysInsideItsJSONString() throws {
        // Fields are checked at parse time, but the JWT writer must escape whatever it is given anyway.
        let fixture = try ServiceAccountFixture()
        defer { fixture.remove() }
        let account = try ServiceAccount(json: fixture.json(["client_email": #"a"b\@x"#]))
        let (_, claims, _, _) = try segments(try AccessTokenRequest(account: account, issuedAt: 1).assertion)
        XCTAssertEqual(claims["iss"], #"a"b\@x"#)
        XCTAssertEqual(claims.objectValue?.count, 5)
    }
}

final class AccessTokenResponseTests: XCTestCase {
    private func parse(_ status: Int, _ body: String) throws(AccessTokenError) -> AccessToken {
        try AccessToken.parse(status: status, body: Array(body.utf8))
    }

    func testParsesGooglesAnswer() throws {
        let token = try parse(200, #"{"access_token":"ya29.c.b0Aaek","expires_in":3599,"token_type":"Bearer"}"#)
        XCTAssertEqual(token, AccessToken(value: "ya29.c.b0Aaek", expiresIn: 3599))
        XCTAssertFalse("\(token)".contains("ya29"))
    }

    func testClampsHugeLifetime() throws {
        let token = try parse(200, #"{"access_token":"t","expires_in":99999999999,"token_type":"bearer"}"#)
        XCTAssertEqual(token.expiresIn, AccessToken.maxExpiresIn)
    }

    func testRefusalsAreConfigurationErrorsWithGooglesWording() {
        let body = #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#
        XCTAssertThrowsError(
            try parse(400, body),
            equals: AccessTokenError.rejected(
                status: 400, error: "invalid_grant", description: "Invalid JWT Signature."))
        XCTAssertTrue(AccessTokenError.rejected(status: 400, error: "", description: "").isConfigurationError)
        XCTAssertThrowsError(
            try parse(401, "<html>"), equals: AccessTokenError.rejected(status: 401, error: "HTTP 401", description: "")
        )
    }

    func testServerErrorsAndThrottlingAreRetryable() {
        XCTAssertThrowsError(try parse(503, ""), equals: AccessTokenError.unavailable(status: 503))
        XCTAssertThrowsError(
            try parse(429, #"{"error":"rate_limit_exceeded"}"#), equals: AccessTokenError.unavailable(status: 429))
        XCTAssertFalse(AccessTokenError.unavailable(status: 503).isConfigurationError)
        XCTAssertFalse(AccessTokenError.transport("refused").isConfigurationError)
    }

    func testRejectsUnusableSuccessAnswers() {
        let cases: [(String, String)] = [
            ("not json", "not a JSON object"),
            (#"{"expires_in":3599,"token_type":"Bearer"}"#, "no access_token string"),
            (#"{"access_token":"","expires_in":3599,"token_type":"Bearer"}"#, "no access_token string"),
            (
                #"{"access_token":"a\r\nX-Injected: 1","expires_in":3599,"token_type":"Bearer"}"#,
                "access_token is not visible ASCII"
            ),
            (#"{"access_token":"a b","expires_in":3599,"token_type":"Bearer"}"#, "access_token is not visible ASCII"),
            (#"{"access_token":"t","expires_in":3599,"token_type":"MAC"}"#, "token_type is not Bearer"),
            (#"{"access_token":"t","expires_in":3599}"#, "token_type is not Bearer"),
            (
                #"{"access_token":"t","expires_in":"3599","token_type":"Bearer"}"#,
                "expires_in is not a positive integer"
            ),
            (#"{"access_token":"t","expires_in":0,"token_type":"Bearer"}"#, "expires_in is not a positive integer"),
            (#"{"access_token":"t","expires_in":1.5,"token_type":"Bearer"}"#, "expires_in is not a positive integer"),
            (#"{"access_token":"t","expires_in":1e400,"token_type":"Bearer"}"#, "not a JSON object"),
            (
                #"{"access_token":""# + String(repeating: "a", count: 9000)
                    + #"","expires_in":1,"token_type":"Bearer"}"#,
                "access_token longer than 8192 bytes"
            ),
        ]
        for (body, reason) in cases {
            XCTAssertThrowsError(try parse(200, body), equals: AccessTokenError.malformedResponse(reason), body)
        }
    }
}
