import BeamsModel
import JSON
import JWTSigner
import XCTest

final class BeamsUserTokenTests: XCTestCase {
    private let instance = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
    private let secret = "0123456789abcdef0123456789abcdef"
    private let now = 1_800_000_000

    private func token(_ claims: [String: JSONValue], secret: String? = nil) throws -> String {
        try HS256.sign(claims: claims, secret: secret ?? self.secret)
    }

    private func standard(sub: JSONValue = "alice") -> [String: JSONValue] {
        ["sub": sub, "iss": .string(BeamsUserToken.issuer(instanceID: instance)), "exp": .int(now + 3600)]
    }

    private func verify(_ header: String?) throws(BeamsError) -> String {
        try BeamsUserToken.verify(authorization: header, instanceID: instance, secret: secret, now: now)
    }

    private func assertRejected(
        _ header: String?, _ status: Int, _ description: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try verify(header), file: file, line: line) { error in
            let beams = error as? BeamsError
            XCTAssertEqual(beams?.statusCode, status, file: file, line: line)
            XCTAssertEqual(beams?.detail, description, file: file, line: line)
        }
    }

    func testAcceptsWhatTheServerSDKsIssue() throws {
        XCTAssertEqual(try verify("Bearer \(try token(standard()))"), "alice")
        let issued = try BeamsUserToken.issue(instanceID: instance, userID: "bob", secret: secret, now: now)
        XCTAssertEqual(try verify("Bearer \(issued)"), "bob")
    }

    func testAcceptsSchemelessAndUpperCaseIssuers() throws {
        var claims = standard()
        claims["iss"] = .string("\(instance).pushnotifications.pusher.com")
        XCTAssertEqual(try verify("Bearer \(try token(claims))"), "alice", "server-Swift SDK 2.0.0 form")
        claims["iss"] = .string("https://\(instance.uppercased()).pushnotifications.pusher.com")
        XCTAssertEqual(try verify("Bearer \(try token(claims))"), "alice")
    }

    func testRejectsMissingOrMalformedHeader() {
        assertRejected(nil, 401, "`Authorization` header token is missing")
        assertRejected("Basic abc", 401, "`Authorization` header token is malformed")
        assertRejected("Bearer not.a.jwt!", 401, "`Authorization` header token is malformed")
    }

    func testRejectsWrongSecretAndAlgNone() throws {
        assertRejected("Bearer \(try token(standard(), secret: "other"))", 401, "Invalid JWT: signature is invalid")
        let header = Base64URL.encode(#"{"alg":"none","typ":"JWT"}"#)
        let claims = Base64URL.encode(JSONValue.object(standard()).jsonText)
        assertRejected("Bearer \(header).\(claims).", 401, "Invalid JWT: algorithm none is not accepted, use HS256")
    }

    func testRejectsMissingClaimsWithBeamsTexts() throws {
        var claims = standard()
        claims["exp"] = nil
        assertRejected("Bearer \(try token(claims))", 400, "Missing expiration (exp) field in JWT")
        claims = standard()
        claims["sub"] = nil
        assertRejected("Bearer \(try token(claims))", 400, "Missing subject (sub) field in JWT")
        claims = standard()
        claims["iss"] = nil
        assertRejected("Bearer \(try token(claims))", 400, "Missing issuer (iss) field in JWT")
        assertRejected(
            "Bearer \(try token(standard(sub: .string(String(repeating: "x", count: 165)))))", 400,
            "JWT subject (sub) must be between 1-164 characters long")
    }

    func testRejectsAnotherInstancesIssuer() throws {
        var claims = standard()
        claims["iss"] = "https://11111111-2222-3333-4444-555555555555.pushnotifications.pusher.com"
        assertRejected("Bearer \(try token(claims))", 403, "Invalid JWT issuer")
    }

    func testTimeClaimsUseTheLeeway() throws {
        var claims = standard()
        claims["exp"] = .int(now - BeamsUserToken.leewaySeconds - 1)
        assertRejected("Bearer \(try token(claims))", 401, "Invalid JWT claims: Token is expired")
        claims["exp"] = .int(now - BeamsUserToken.leewaySeconds + 1)
        XCTAssertNoThrow(try verify("Bearer \(try token(claims))"))
        claims = standard()
        claims["iat"] = .int(now + BeamsUserToken.leewaySeconds + 1)
        assertRejected("Bearer \(try token(claims))", 401, "Invalid JWT claims: Token used before issued")
    }

    func testHostileClaimValuesOfEveryTypeAndSizeGet4xxNeverATrap() throws {
        let values: [JSONValue] = [
            .int(.max), .int(.min), .int(0), .int(-1), .double(9_223_372_036_854_775_808), .double(1e308),
            .double(-1e308), .double(-0.0), .double(1.5), .string(""), .string("1800000000"),
            .string(String(repeating: "x", count: 5000)), .string("\u{0}"), .bool(true), .null, .array([]),
            .array([.int(1)]), .object(["nested": .object(["deeper": .array([.null])])]),
        ]
        for claim in ["exp", "iat", "nbf", "sub", "iss"] {
            for value in values {
                var claims = standard()
                claims[claim] = value
                let header = "Bearer " + (try token(claims))
                do {
                    _ = try verify(header)
                } catch {
                    XCTAssertTrue((400..<500).contains(error.statusCode), "\(claim)=\(value): \(error)")
                }
            }
        }
    }

    func testIssuingWithALifetimePastIntMaxSaturatesTheExpiry() throws {
        let issued = try BeamsUserToken.issue(
            instanceID: instance, userID: "alice", secret: secret, now: now, lifetime: .max)
        let claims = try JWTVerifier.verify(issued, key: .hs256(secret: secret), expectedAlgorithm: .hs256, now: now)
        XCTAssertEqual(claims.exp, .max)
        XCTAssertEqual(try verify("Bearer \(issued)"), "alice")
    }
}
