import HTTPClient
import XCTest

final class DestinationPolicyTests: XCTestCase {
    private func address(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> IPAddress {
        guard let address = IPAddress(text) else {
            XCTFail("not an address: \(text)", file: file, line: line)
            return IPAddress(0, 0, 0, 0)
        }
        return address
    }

    /// The name of the range that refuses `text` under `policy`, or nil when it is allowed.
    private func refusal(
        _ text: String, _ policy: DestinationPolicy = DestinationPolicy(), host: String = "hooks.example.com",
        file: StaticString = #filePath, line: UInt = #line
    ) -> String? {
        switch policy.verdict(for: address(text, file: file, line: line), host: host) {
        case .allowed: return nil
        case .refused(let range): return range.name
        }
    }

    private func policy(_ entries: String...) throws -> DestinationPolicy {
        DestinationPolicy(allowances: try entries.map { try DestinationPolicy.Allowance(parsing: $0) })
    }

    func testRefusesEverySpecialIPv4RangeByDefault() {
        let refused: [(String, String)] = [
            ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"),
            ("10.0.0.1", "private"), ("10.255.255.255", "private"),
            ("100.64.0.1", "carrier-grade NAT"), ("100.127.255.254", "carrier-grade NAT"),
            ("127.0.0.1", "loopback"), ("127.255.255.254", "loopback"),
            ("169.254.169.254", "link-local"), ("169.254.0.1", "link-local"),
            ("172.16.0.1", "private"), ("172.31.255.255", "private"),
            ("192.0.0.170", "IETF protocol assignments"), ("192.0.2.10", "documentation"),
            ("192.88.99.1", "6to4 relay"), ("192.168.1.1", "private"), ("198.18.0.1", "benchmarking"),
            ("198.19.255.255", "benchmarking"), ("198.51.100.7", "documentation"), ("203.0.113.9", "documentation"),
            ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("240.0.0.1", "reserved"),
            ("255.255.255.255", "reserved"),
        ]
        for (text, name) in refused {
            let reason = refusal(text)
            XCTAssertNotNil(reason, text)
            XCTAssertTrue(reason?.contains(name) ?? false, "\(text): \(reason ?? "allowed")")
        }
    }

    func testAllowsPublicIPv4NextToTheSpecialRanges() {
        for text in [
            "8.8.8.8", "1.1.1.1", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
            "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255",
            "172.32.0.0", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0",
            "223.255.255.255",
        ] {
            XCTAssertNil(refusal(text), text)
        }
    }

    func testRefusesEverySpecialIPv6RangeByDefault() {
        let refused: [(String, String)] = [
            ("::", "unspecified"), ("::1", "loopback"), ("::127.0.0.1", "reserved"), ("::ffff:0:7f00:1", "reserved"),
            ("64:ff9b:1::1", "local-use NAT64"), ("100::1", "discard"), ("2001::1", "Teredo"),
            ("2001:db8::1", "documentation"), ("3fff::1", "documentation"), ("5f00::1", "SRv6"),
            ("fc00::1", "unique local"), ("fd12:3456::1", "unique local"), ("fe80::1", "link-local"),
            ("febf::1", "link-local"), ("fec0::1", "site-local"), ("ff02::1", "multicast"), ("ff0e::1", "multicast"),
        ]
        for (text, name) in refused {
            let reason = refusal(text)
            XCTAssertNotNil(reason, text)
            XCTAssertTrue(reason?.contains(name) ?? false, "\(text): \(reason ?? "allowed")")
        }
        for text in ["2606:4700:4700::1111", "2a00:1450:4001::200e", "2001:4860:4860::8888", "fbff::1", "100:0:0:1::1"]
        {
            XCTAssertNil(refusal(text), text)
        }
    }

    func testJudgesIPv4MappedAddressesAsTheIPv4AddressTheyReach() {
        XCTAssertEqual(refusal("::ffff:127.0.0.1"), "loopback")
        XCTAssertEqual(refusal("::ffff:7f00:1"), "loopback")
        XCTAssertEqual(refusal("::ffff:10.1.2.3"), "private")
        XCTAssertEqual(refusal("::ffff:169.254.169.254"), "link-local (cloud metadata endpoints live here)")
        XCTAssertEqual(refusal("::ffff:0.0.0.0"), "unspecified (\"this network\")")
        XCTAssertNil(refusal("::ffff:8.8.8.8"))
    }

    func testJudgesNAT64And6to4ByTheEmbeddedIPv4Address() {
        XCTAssertEqual(refusal("64:ff9b::a9fe:a9fe"), "link-local (cloud metadata endpoints live here)")
        XCTAssertEqual(refusal("64:ff9b::127.0.0.1"), "loopback")
        XCTAssertNil(refusal("64:ff9b::8.8.8.8"))
        XCTAssertEqual(refusal("2002:7f00:1::1"), "loopback")
        XCTAssertEqual(refusal("2002:c0a8:101::"), "private")
        XCTAssertNil(refusal("2002:808:808::1"))
    }

    func testAllowedNetworkOpensOnlyThatNetwork() throws {
        let allowLoopbackHost = try policy("127.0.0.1")
        XCTAssertNil(refusal("127.0.0.1", allowLoopbackHost))
        XCTAssertNil(refusal("::ffff:127.0.0.1", allowLoopbackHost), "the mapped form reaches the same address")
        XCTAssertEqual(refusal("127.0.0.2", allowLoopbackHost), "loopback")
        XCTAssertEqual(refusal("::1", allowLoopbackHost), "loopback")
        let allowPrivate = try policy("10.0.0.0/8", "fd00::/8")
        XCTAssertNil(refusal("10.20.30.40", allowPrivate))
        XCTAssertNil(refusal("fd00::5", allowPrivate))
        XCTAssertEqual(refusal("fc00::5", allowPrivate), "unique local (private)")
        XCTAssertEqual(refusal("192.168.0.1", allowPrivate), "private")
        XCTAssertEqual(refusal("169.254.169.254", allowPrivate), "link-local (cloud metadata endpoints live here)")
    }

    func testAllowedHostNameOpensItsAddressesCaseInsensitively() throws {
        let allowed = try policy("Hooks.Internal.")
        XCTAssertNil(refusal("10.1.1.1", allowed, host: "hooks.internal"))
        XCTAssertNil(refusal("127.0.0.1", allowed, host: "HOOKS.internal."))
        XCTAssertEqual(refusal("10.1.1.1", allowed, host: "other.internal"), "private")
        XCTAssertEqual(refusal("10.1.1.1", allowed, host: "evil-hooks.internal"), "private")
    }

    func testUnusableRangesStayRefusedEvenWhenAllowed() throws {
        let everything = try policy("0.0.0.0/0", "::/0", "hooks.internal")
        XCTAssertNil(refusal("127.0.0.1", everything))
        XCTAssertNil(refusal("fe80::1", everything))
        for text in ["0.0.0.0", "224.0.0.1", "255.255.255.255", "::", "ff02::1", "::ffff:0.0.0.0"] {
            XCTAssertNotNil(refusal(text, everything), text)
            XCTAssertNotNil(refusal(text, everything, host: "hooks.internal"), text)
        }
    }

    func testEveryTableEntryIsACanonicalNetwork() {
        XCTAssertEqual(SpecialAddressRange.all.count, 30)
        for range in SpecialAddressRange.all {
            XCTAssertEqual(try? IPNetwork(parsing: range.network.description), range.network, range.description)
        }
        XCTAssertEqual(
            SpecialAddressRange.containing(address("169.254.169.254"))?.description,
            "link-local (cloud metadata endpoints live here) (169.254.0.0/16)")
    }

    func testParsesAllowances() throws {
        XCTAssertEqual(
            try DestinationPolicy.Allowance(parsing: "10.0.0.0/8"),
            .network(try IPNetwork(parsing: "10.0.0.0/8")))
        XCTAssertEqual(try DestinationPolicy.Allowance(parsing: "::1"), .network(try IPNetwork(parsing: "::1/128")))
        XCTAssertEqual(try DestinationPolicy.Allowance(parsing: "Hooks-1.Example.COM."), .host("hooks-1.example.com"))
        for bad in ["", ".", "bad host", "hooks..internal", ".hooks", "hooks/x", "bücher.de", "*.internal", "a_b"] {
            XCTAssertThrowsError(try DestinationPolicy.Allowance(parsing: bad), bad)
        }
        XCTAssertThrowsError(try DestinationPolicy.Allowance(parsing: "10.1.0.0/8")) { error in
            XCTAssertEqual("\(error)", "has bits set after the prefix (did you mean 10.0.0.0/8?)")
        }
    }
}
