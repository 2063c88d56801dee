import JWTSigner
import TestSupport
import WebPush
import XCTest

final class VAPIDTokenStateTests: XCTestCase {
    let fcm = "https://fcm.googleapis.com"
    let mozilla = "https://updates.push.services.mozilla.com"

    func testFirstRequestSignsWithTheConfiguredLifetime() {
        let state = VAPIDTokenState()
        XCTAssertEqual(state.token(for: fcm, now: 1000), .sign(expiresAt: 1000 + 12 * 3600))
    }

    func testReusesTheTokenUntilRenewBeforeExpiryThenSignsAgain() {
        var state = VAPIDTokenState(policy: VAPIDTokenPolicy(lifetime: 7200, renewBefore: 600))
        let token = VAPIDTokenState.Token(jwt: "a", expiresAt: 8200)
        state.install(token, for: fcm, now: 1000)
        XCTAssertEqual(state.token(for: fcm, now: 1000), .use(token))
        XCTAssertEqual(state.token(for: fcm, now: 7599), .use(token))
        XCTAssertEqual(state.token(for: fcm, now: 7600), .sign(expiresAt: 14800), "600 s left: renew")
        XCTAssertEqual(state.token(for: fcm, now: 9000), .sign(expiresAt: 16200), "expired")
    }

    func testClockSteppedBackwardsSignsAgainSoExpNeverExceedsTheLifetime() {
        var state = VAPIDTokenState(policy: VAPIDTokenPolicy(lifetime: 7200, renewBefore: 600))
        state.install(VAPIDTokenState.Token(jwt: "a", expiresAt: 8200), for: fcm, now: 1000)
        XCTAssertEqual(state.token(for: fcm, now: 999), .sign(expiresAt: 8199))
    }

    func testTokensArePerOrigin() {
        var state = VAPIDTokenState()
        let token = VAPIDTokenState.Token(jwt: "a", expiresAt: 1000 + 12 * 3600)
        state.install(token, for: fcm, now: 1000)
        XCTAssertEqual(state.token(for: fcm, now: 1001), .use(token))
        XCTAssertEqual(state.token(for: mozilla, now: 1001), .sign(expiresAt: 1001 + 12 * 3600))
    }

    func testCacheStaysWithinMaxOriginsDroppingTheTokenClosestToExpiry() {
        var state = VAPIDTokenState(policy: VAPIDTokenPolicy(lifetime: 7200, renewBefore: 600, maxOrigins: 3))
        for index in 0..<3 {
            state.install(
                VAPIDTokenState.Token(jwt: "t\(index)", expiresAt: 8200 + index), for: "https://h\(index)", now: 1000)
        }
        state.install(VAPIDTokenState.Token(jwt: "new", expiresAt: 8300), for: "https://h9", now: 1100)
        XCTAssertEqual(state.tokens.count, 3)
        XCTAssertNil(state.tokens["https://h0"], "the one expiring first goes")
        XCTAssertNotNil(state.tokens["https://h9"])
        // Replacing an origin already cached evicts nothing.
        state.install(VAPIDTokenState.Token(jwt: "again", expiresAt: 8400), for: "https://h9", now: 1200)
        XCTAssertEqual(state.tokens.count, 3)
        XCTAssertNotNil(state.tokens["https://h1"])
    }

    func testAuthorizerSignsOncePerOriginAndRenewsWhenTheClockMoves() throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_700_000_000))
        let (pair, _) = try VAPIDKeyPair.generate()
        let authorizer = VAPIDAuthorizer(
            keyPair: pair, subject: try VAPIDSubject("https://example.com"),
            policy: VAPIDTokenPolicy(lifetime: 3600, renewBefore: 300), clock: { clock.now })
        let first = try authorizer.authorization(audience: fcm)
        XCTAssertEqual(try authorizer.authorization(audience: fcm), first)
        XCTAssertEqual(authorizer.signCount, 1)
        _ = try authorizer.authorization(audience: mozilla)
        XCTAssertEqual(authorizer.signCount, 2)
        XCTAssertEqual(authorizer.cachedOrigins, 2)
        clock.advance(3300)  // 300 s left: renew
        let renewed = try authorizer.authorization(audience: fcm)
        XCTAssertNotEqual(renewed.token, first.token)
        XCTAssertEqual(authorizer.signCount, 3)
        let verifier = JWTVerifier(
            key: .es256(try ES256PublicKey(uncompressedPoint: pair.publicKey)), expectedAlgorithm: .es256)
        XCTAssertEqual(try verifier.verify(renewed.token, now: 1_700_003_300).exp, 1_700_003_300 + 3600)
    }
}
