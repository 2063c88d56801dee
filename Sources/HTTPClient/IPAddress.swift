import Glibc

/// An IPv4 or IPv6 address: 4 or 16 bytes in network order. A plain value, so the destination policy is tested
/// without sockets.
package struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    package enum Family: Sendable { case v4, v6 }

    /// 4 bytes (IPv4) or 16 bytes (IPv6), most significant first.
    package let bytes: [UInt8]

    package var family: Family { bytes.count == 4 ? .v4 : .v6 }

    /// An IPv4 address from its four octets.
    package init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        bytes = [a, b, c, d]
    }

    /// Raw bytes; nil unless there are exactly 4 or 16.
    package init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses the textual forms `inet_pton` accepts: dotted decimal IPv4 (no octal, hex or shortened forms
    /// such as `127.1`, which `inet_aton` would read) and RFC 4291 IPv6, including `::ffff:1.2.3.4`. No zone
    /// ids, no brackets.
    package init?(_ text: String) {
        // The longest IPv6 text (with an embedded IPv4) is 45 bytes; anything longer is not an address.
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 16)
        if text.contains(":") {
            guard inet_pton(AF_INET6, text, &buffer) == 1 else { return nil }
            bytes = buffer
        } else {
            guard inet_pton(AF_INET, text, &buffer) == 1 else { return nil }
            bytes = Array(buffer[0..<4])
        }
    }

    /// The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), which a dual-stack socket
    /// connects to as plain IPv4; nil for anything else.
    package var mappedIPv4: IPAddress? {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF
        else { return nil }
        return IPAddress(bytes[12], bytes[13], bytes[14], bytes[15])
    }

    /// Splits `host:port` or `[host]:port` (the form sockets are reported and listeners configured in) at the port
    /// separator; nil when there is none. `bracketed` tells the IPv6 form, whose host is returned without brackets.
    package static func splitHostPort(_ text: String) -> (host: String, port: Substring, bracketed: Bool)? {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return nil
            }
            return (
                String(text[text.index(after: text.startIndex)..<close]), text[text.index(close, offsetBy: 2)...], true
            )
        }
        guard let colon = text.lastIndex(of: ":") else { return nil }
        return (String(text[..<colon]), text[text.index(after: colon)...], false)
    }

    /// The address a connection really has: the IPv4 address for an IPv4-mapped one, else itself.
    package var unmapped: IPAddress { mappedIPv4 ?? self }

    /// 127.0.0.0/8 or `::1` (an IPv4-mapped loopback address counts too).
    package var isLoopback: Bool {
        let address = unmapped
        if address.bytes.count == 4 { return address.bytes[0] == 127 }
        return address.bytes == [UInt8](repeating: 0, count: 15) + [1]
    }

    /// The 4 bytes at `offset` of an IPv6 address, as an IPv4 address (NAT64 and 6to4 embed one).
    func embeddedIPv4(at offset: Int) -> IPAddress? {
        guard bytes.count == 16, offset >= 0, offset + 4 <= 16 else { return nil }
        return IPAddress(bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3])
    }

    /// `inet_ntop`'s canonical text (`127.0.0.1`, `::1`, `::ffff:10.0.0.1`).
    package var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, bytes, &text, socklen_t(text.count)) != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
