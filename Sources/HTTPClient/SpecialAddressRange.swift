/// An address range that is not an ordinary public unicast destination (IANA's IPv4 and IPv6 Special-Purpose
/// Address Registries, RFC 6890 and updates), with what a request to it could reach.
package struct SpecialAddressRange: Sendable, Equatable, CustomStringConvertible {
    /// How the destination policy treats the range.
    package enum Treatment: Sendable, Equatable {
        /// Refused unless the operator allows the network or host (loopback, private, link-local, …).
        case refused
        /// Refused even when allowed: no webhook receiver can live there, and some of these reach this host
        /// anyway (`connect()` to 0.0.0.0 or :: lands on loopback).
        case neverAllowed
        /// An IPv6 prefix that carries an IPv4 address at `offset` (NAT64, 6to4): judged by that address,
        /// because a translator on the path delivers the packets there.
        case embedsIPv4(offset: Int)
    }

    package let network: IPNetwork
    /// What the range is, for the refusal reason (`loopback`, `private`, `link-local (cloud metadata)`).
    package let name: String
    package let treatment: Treatment

    package var description: String { "\(name) (\(network))" }

    /// Most specific first: the first range containing an address names it.
    package static let all: [SpecialAddressRange] = [
        // IPv4
        range("0.0.0.0/8", "unspecified (\"this network\")", .neverAllowed),
        range("10.0.0.0/8", "private"),
        range("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
        range("127.0.0.0/8", "loopback"),
        range("169.254.0.0/16", "link-local (cloud metadata endpoints live here)"),
        range("172.16.0.0/12", "private"),
        range("192.0.0.0/24", "IETF protocol assignments"),
        range("192.0.2.0/24", "documentation (TEST-NET-1)"),
        range("192.88.99.0/24", "6to4 relay anycast"),
        range("192.168.0.0/16", "private"),
        range("198.18.0.0/15", "benchmarking"),
        range("198.51.100.0/24", "documentation (TEST-NET-2)"),
        range("203.0.113.0/24", "documentation (TEST-NET-3)"),
        range("224.0.0.0/4", "multicast", .neverAllowed),
        range("240.0.0.0/4", "reserved (and the limited broadcast address)", .neverAllowed),
        // IPv6. IPv4-mapped addresses (::ffff:0:0/96) are judged as the IPv4 address before this table.
        range("::/128", "unspecified", .neverAllowed),
        range("::1/128", "loopback"),
        range("64:ff9b::/96", "NAT64", .embedsIPv4(offset: 12)),
        range("64:ff9b:1::/48", "local-use NAT64"),
        range("::/8", "reserved (IPv4-compatible and IPv4-translated forms)"),
        range("100::/64", "discard-only"),
        range("2001::/23", "IETF protocol assignments (Teredo, benchmarking, ORCHID)"),
        range("2001:db8::/32", "documentation"),
        range("2002::/16", "6to4", .embedsIPv4(offset: 2)),
        range("3fff::/20", "documentation"),
        range("5f00::/16", "segment routing (SRv6) SIDs"),
        range("fc00::/7", "unique local (private)"),
        range("fe80::/10", "link-local"),
        range("fec0::/10", "site-local (deprecated)"),
        range("ff00::/8", "multicast", .neverAllowed),
    ]

    /// The first range containing `address`, if any.
    package static func containing(_ address: IPAddress) -> SpecialAddressRange? {
        all.first { $0.network.contains(address) }
    }

    private static func range(_ cidr: String, _ name: String, _ treatment: Treatment = .refused) -> SpecialAddressRange
    {
        // Constants of this file, checked by the tests; not input.
        guard let network = try? IPNetwork(parsing: cidr) else { preconditionFailure("bad constant \(cidr)") }
        return SpecialAddressRange(network: network, name: name, treatment: treatment)
    }
}
