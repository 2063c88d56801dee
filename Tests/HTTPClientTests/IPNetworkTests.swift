import HTTPClient
import XCTest

final class IPNetworkTests: XCTestCase {
    func testParsesCIDRAndSingleAddresses() throws {
        let ten = try IPNetwork(parsing: "10.0.0.0/8")
        XCTAssertEqual(ten.prefixLength, 8)
        XCTAssertEqual(ten.description, "10.0.0.0/8")
        XCTAssertEqual(try IPNetwork(parsing: "127.0.0.1").description, "127.0.0.1/32")
        XCTAssertEqual(try IPNetwork(parsing: "::1").description, "::1/128")
        XCTAssertEqual(try IPNetwork(parsing: "FD00::/8").description, "fd00::/8")
        XCTAssertEqual(try IPNetwork(parsing: "0.0.0.0/0").prefixLength, 0)
        XCTAssertEqual(try IPNetwork(parsing: "172.16.0.0/12").description, "172.16.0.0/12")
    }

    func testRefusesHostBitsAfterThePrefixWithASuggestion() {
        XCTAssertThrowsError(try IPNetwork(parsing: "10.1.0.0/8")) { error in
            XCTAssertEqual(error as? IPNetwork.ParseError, .hostBitsSet(suggestion: "10.0.0.0/8"))
        }
        XCTAssertThrowsError(try IPNetwork(parsing: "172.17.0.0/12")) { error in
            XCTAssertEqual(error as? IPNetwork.ParseError, .hostBitsSet(suggestion: "172.16.0.0/12"))
        }
        XCTAssertThrowsError(try IPNetwork(parsing: "fd00::1/8")) { error in
            XCTAssertEqual(error as? IPNetwork.ParseError, .hostBitsSet(suggestion: "fd00::/8"))
        }
    }

    func testRefusesBadPrefixLengths() {
        for text in [
            "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/8/8", "10.0.0.0/ 8",
            "10.0.0.0/0008", "::/129", "::/999999999999999999999",
        ] {
            XCTAssertThrowsError(try IPNetwork(parsing: text), text) { error in
                guard case .badPrefixLength = error as? IPNetwork.ParseError else {
                    return XCTFail("\(text): \(error)")
                }
            }
        }
    }

    func testRefusesAmbiguousAddressForms() {
        // inet_aton would read these as 127.0.0.1: a classic way around string-based SSRF filters.
        for text in [
            "127.1", "0x7f.0.0.1", "2130706433", "017700000001", "127.0.0.1 ", " 127.0.0.1", "127.0.0.1.",
            "[::1]", "fe80::1%eth0", "1.2.3.256", "", "::1::", "hooks.internal",
        ] {
            XCTAssertNil(IPAddress(text), text)
            XCTAssertThrowsError(try IPNetwork(parsing: text), text)
        }
    }

    func testContainsMatchesOnlyItsOwnFamilyAndPrefix() throws {
        let network = try IPNetwork(parsing: "172.16.0.0/12")
        XCTAssertTrue(network.contains(IPAddress(172, 16, 0, 0)))
        XCTAssertTrue(network.contains(IPAddress(172, 31, 255, 255)))
        XCTAssertFalse(network.contains(IPAddress(172, 32, 0, 0)))
        XCTAssertFalse(network.contains(IPAddress(172, 15, 255, 255)))
        XCTAssertFalse(network.contains(try XCTUnwrap(IPAddress("::ffff:172.16.0.1"))), "families never mix")
        let everything = try IPNetwork(parsing: "::/0")
        XCTAssertTrue(everything.contains(try XCTUnwrap(IPAddress("2001:db8::1"))))
        XCTAssertFalse(everything.contains(IPAddress(1, 2, 3, 4)))
        let odd = try IPNetwork(parsing: "2001:db8:8000::/33")
        XCTAssertTrue(odd.contains(try XCTUnwrap(IPAddress("2001:db8:ffff::1"))))
        XCTAssertFalse(odd.contains(try XCTUnwrap(IPAddress("2001:db8:7fff::1"))))
    }

    func testAddressTextRoundTripsAndMappedFormIsRecognised() throws {
        for text in ["0.0.0.0", "255.255.255.255", "::", "::1", "2001:db8::1", "::ffff:10.0.0.1", "fe80::1:2"] {
            XCTAssertEqual(try XCTUnwrap(IPAddress(text)).description, text)
        }
        XCTAssertEqual(try XCTUnwrap(IPAddress("::ffff:7f00:1")).mappedIPv4, IPAddress(127, 0, 0, 1))
        XCTAssertNil(try XCTUnwrap(IPAddress("::7f00:1")).mappedIPv4)
        XCTAssertNil(IPAddress(127, 0, 0, 1).mappedIPv4)
        XCTAssertNil(IPAddress(bytes: [1, 2, 3]))
    }
}
