import HTTPServer
import PushServer
import XCTest

final class ClientAddressTests: XCTestCase {
    private func request(peer: String, forwardedFor: [String] = []) -> HTTPRequest {
        HTTPRequest(
            method: .post, rawTarget: "/", path: "/",
            headers: HTTPHeaders(forwardedFor.map { ("X-Forwarded-For", $0) }), clientAddress: peer)
    }

    func testIPv4AddressesCountOneByOne() {
        XCTAssertEqual(ClientAddress.key(forAddress: "192.0.2.7"), "192.0.2.7")
        XCTAssertNotEqual(ClientAddress.key(forAddress: "192.0.2.7"), ClientAddress.key(forAddress: "192.0.2.8"))
    }

    func testIPv6AddressesCountByTheirSlash64() {
        let a = ClientAddress.key(forAddress: "2001:db8:1:2:aaaa::1")
        let b = ClientAddress.key(forAddress: "2001:db8:1:2:ffff:ffff:ffff:ffff")
        XCTAssertEqual(a, "2001:db8:1:2::/64")
        XCTAssertEqual(a, b, "a host rotating inside its /64 is one client")
        XCTAssertNotEqual(a, ClientAddress.key(forAddress: "2001:db8:1:3::1"))
    }

    func testIPv4MappedIPv6CountsAsTheIPv4Address() {
        XCTAssertEqual(ClientAddress.key(forAddress: "::ffff:192.0.2.7"), "192.0.2.7")
    }

    func testCanonicalFormOfConfiguredAddresses() {
        XCTAssertEqual(ClientAddress.canonical("0:0::1"), "::1")
        XCTAssertEqual(ClientAddress.canonical("::ffff:10.0.0.1"), "10.0.0.1")
        XCTAssertNil(ClientAddress.canonical("proxy.example.com"))
        XCTAssertNil(ClientAddress.canonical("10.0.0.0/8"))
    }

    func testForwardedForIsIgnoredFromAnUntrustedPeer() {
        let spoofed = request(peer: "198.51.100.9", forwardedFor: ["203.0.113.1"])
        XCTAssertEqual(ClientAddress.key(spoofed, trustedProxies: ["127.0.0.1"]), "198.51.100.9")
        XCTAssertEqual(ClientAddress.key(spoofed, trustedProxies: []), "198.51.100.9")
    }

    func testTrustedProxyNamesTheRightMostUntrustedHop() {
        // The client wrote "1.1.1.1" itself; the first proxy appended the real client; the second proxy is trusted.
        let proxied = request(peer: "127.0.0.1", forwardedFor: ["1.1.1.1, 203.0.113.5", "10.0.0.2"])
        XCTAssertEqual(ClientAddress.key(proxied, trustedProxies: ["127.0.0.1", "10.0.0.2"]), "203.0.113.5")
    }

    func testGarbageInForwardedForStopsTheWalkAtThePeer() {
        let junk = request(peer: "127.0.0.1", forwardedFor: ["203.0.113.5, not-an-address"])
        XCTAssertEqual(ClientAddress.key(junk, trustedProxies: ["127.0.0.1"]), "127.0.0.1")
        let none = request(peer: "127.0.0.1")
        XCTAssertEqual(ClientAddress.key(none, trustedProxies: ["127.0.0.1"]), "127.0.0.1")
        let onlyProxies = request(peer: "127.0.0.1", forwardedFor: ["127.0.0.1"])
        XCTAssertEqual(ClientAddress.key(onlyProxies, trustedProxies: ["127.0.0.1"]), "127.0.0.1")
    }
}
