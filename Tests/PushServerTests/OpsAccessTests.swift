import PushServer
import XCTest

/// Who may read `/metrics` and `/ready`'s details.
final class OpsAccessTests: XCTestCase {
    private let token = String(repeating: "k", count: 40)

    func testWithoutTokenOrListenerOnlyUnforwardedLoopbackPeersMay() {
        let access = OpsAccess(token: nil, hasOpsListener: false)
        for peer in ["127.0.0.1:5000", "127.8.9.10:1", "[::1]:5000", "[::ffff:127.0.0.1]:5000"] {
            XCTAssertEqual(access.decide(authorization: nil, peer: peer, forwarded: false, on: .main), .allowed, peer)
        }
        for peer in ["10.0.0.1:5000", "[2001:db8::1]:443", "128.0.0.1:1", "[::ffff:10.0.0.1]:5000", "1270.0.0.1:1", ""]
        {
            XCTAssertEqual(
                access.decide(authorization: nil, peer: peer, forwarded: false, on: .main), .notServedHere, peer)
        }
        XCTAssertEqual(
            access.decide(authorization: nil, peer: "127.0.0.1:5000", forwarded: true, on: .main), .notServedHere,
            "a reverse proxy on the same host connects from loopback for internet clients")
    }

    func testATokenIsRequiredEverywhereOnceConfiguredAndComparedExactly() {
        let access = OpsAccess(token: token, hasOpsListener: false)
        XCTAssertEqual(
            access.decide(authorization: "Bearer \(token)", peer: "203.0.113.9:1", forwarded: true, on: .main), .allowed
        )
        XCTAssertEqual(
            access.decide(authorization: "bearer  \(token) ", peer: "10.0.0.1:1", forwarded: false, on: .main), .allowed
        )
        XCTAssertEqual(
            access.decide(authorization: nil, peer: "127.0.0.1:1", forwarded: false, on: .main), .tokenRequired,
            "loopback is not enough once a token is configured")
        for wrong in ["Bearer \(token)x", "Bearer \(token.dropLast())", "Basic \(token)", "Bearer", token, ""] {
            XCTAssertEqual(
                access.decide(authorization: wrong, peer: "127.0.0.1:1", forwarded: false, on: .main), .tokenRequired,
                wrong)
        }
    }

    func testWithAnOpsListenerTheMainListenerNeverServesDetails() {
        let open = OpsAccess(token: nil, hasOpsListener: true)
        XCTAssertEqual(
            open.decide(authorization: nil, peer: "127.0.0.1:1", forwarded: false, on: .main), .notServedHere)
        XCTAssertEqual(open.decide(authorization: nil, peer: "10.1.2.3:1", forwarded: false, on: .ops), .allowed)
        let guarded = OpsAccess(token: token, hasOpsListener: true)
        XCTAssertEqual(
            guarded.decide(authorization: "Bearer \(token)", peer: "127.0.0.1:1", forwarded: false, on: .main),
            .notServedHere)
        XCTAssertEqual(
            guarded.decide(authorization: nil, peer: "127.0.0.1:1", forwarded: false, on: .ops), .tokenRequired)
        XCTAssertEqual(
            guarded.decide(authorization: "Bearer \(token)", peer: "10.1.2.3:1", forwarded: false, on: .ops), .allowed)
    }

    func testBearerTokenParsing() {
        XCTAssertEqual(BearerToken.parse("Bearer abc"), "abc")
        XCTAssertEqual(BearerToken.parse("BEARER   abc  "), "abc")
        XCTAssertNil(BearerToken.parse("Bearer "))
        XCTAssertNil(BearerToken.parse("Basic abc"))
        XCTAssertNil(BearerToken.parse(nil))
    }
}
