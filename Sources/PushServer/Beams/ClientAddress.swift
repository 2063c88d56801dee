import Foundation
import HTTPClient
import HTTPServer

/// The client a request is charged to by per-client limits.
///
/// The key is the socket peer's address. Behind a reverse proxy every request has the proxy's address, so all
/// clients would share one budget; listing the proxy in `limits.trustedProxies` makes the server read the
/// client from the proxy's `X-Forwarded-For` instead (the right-most address that is not itself a trusted proxy:
/// everything left of it was written by the client and cannot be trusted).
///
/// IPv4 addresses count one by one. IPv6 addresses count by /64, because one subscriber line or host usually gets
/// a whole /64 and could otherwise rotate through 2^64 addresses. IPv4-mapped IPv6 (`::ffff:192.0.2.7`, what a
/// dual-stack listener sees) counts as the IPv4 address.
package enum ClientAddress {
    /// The limiter key for `request`.
    package static func key(_ request: HTTPRequest, trustedProxies: Set<String>) -> String {
        let peer = request.clientAddress
        guard !trustedProxies.isEmpty, let peerAddress = parse(peer), trustedProxies.contains(peerAddress.description)
        else {
            return key(forAddress: peer)
        }
        // Several X-Forwarded-For fields form one list, in order (RFC 9110 §5.3).
        let hops = request.headers.values("x-forwarded-for")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            guard let address = parse(hop) else { break }  // garbage: stop trusting the list here
            if !trustedProxies.contains(address.description) { return key(address) }
        }
        return key(peerAddress)
    }

    /// The key of one textual address; unparsable text (never produced by the socket layer) is its own key.
    package static func key(forAddress address: String) -> String {
        parse(address).map(key) ?? address
    }

    /// The canonical text of an address (`0:0::1` → `::1`), or nil when it is not an IP address.
    package static func canonical(_ address: String) -> String? {
        parse(address)?.description
    }

    private static func key(_ address: IPAddress) -> String {
        if address.family == .v4 { return address.description }
        let prefix = IPAddress(bytes: Array(address.bytes[0..<8]) + [UInt8](repeating: 0, count: 8)) ?? address
        return prefix.description + "/64"
    }

    /// An IPv4-mapped IPv6 address counts as its IPv4 address.
    private static func parse(_ text: String) -> IPAddress? {
        IPAddress(text)?.unmapped
    }
}
