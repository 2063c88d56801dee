import Glibc

/// A client's IP address as 16 bytes (IPv4 as IPv4-mapped IPv6, so `192.0.2.7` and `::ffff:192.0.2.7` are one
/// address), and the key the per-address connection limits count it by (`key`).
struct PeerAddress: Hashable, Sendable {
    /// The first and last 8 bytes of the (mapped) IPv6 address, big-endian.
    let high: UInt64
    let low: UInt64

    /// What per-address limits count by: one IPv4 address, or one IPv6 /64, because one subscriber line or host
    /// usually gets a whole /64 and could otherwise open connections from 2^64 addresses.
    enum Key: Hashable, Sendable {
        case v4(UInt32)
        case v6Prefix(UInt64)
    }

    /// From raw network-order bytes: 4 (IPv4) or 16 (IPv6); nil for any other count.
    init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4:
            high = 0
            low = 0x0000_FFFF_0000_0000 | UInt64(Self.load(bytes[0..<4]))
        case 16:
            high = Self.load(bytes[0..<8])
            low = Self.load(bytes[8..<16])
        default:
            return nil
        }
    }

    /// From text (`192.0.2.7`, `2001:db8::1`, `::ffff:192.0.2.7`); nil when it is not an IP address.
    init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(bytes: withUnsafeBytes(of: v4) { Array($0) })
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(bytes: withUnsafeBytes(of: v6) { Array($0) })
        } else {
            return nil
        }
    }

    /// IPv4 (or IPv4-mapped IPv6).
    var isV4: Bool { high == 0 && low >> 32 == 0x0000_FFFF }

    /// The per-address limits' key: the IPv4 address, or the IPv6 address's /64 prefix.
    var key: Key { isV4 ? .v4(UInt32(truncatingIfNeeded: low)) : .v6Prefix(high) }

    private static func load(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
