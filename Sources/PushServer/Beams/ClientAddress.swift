import Foundation
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
enum ClientAddress {
    /// The limiter key for `request`.
    static func key(_ request: HTTPRequest, trustedProxies: Set<String>) -> String {
        let peer = request.clientAddress
        guard !trustedProxies.isEmpty, let peerBytes = parse(peer), trustedProxies.contains(canonical(peerBytes)) else {
            return key(forAddress: peer)
        }
        // Several X-Forwarded-For fields form one list, in order (RFC 9110 §5.3).
        let hops = request.headers.values("x-forwarded-for")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            guard let bytes = parse(hop) else { break }  // garbage: stop trusting the list here
            if !trustedProxies.contains(canonical(bytes)) { return key(bytes) }
        }
        return key(peerBytes)
    }

    /// The key of one textual address; unparsable text (never produced by the socket layer) is its own key.
    static func key(forAddress address: String) -> String {
        parse(address).map(key) ?? address
    }

    /// The canonical text of an address (`0:0::1` → `::1`), or nil when it is not an IP address.
    static func canonical(_ address: String) -> String? {
        parse(address).map(canonical)
    }

    private static func key(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return canonical(bytes) }
        return canonical(Array(bytes[0..<8]) + [UInt8](repeating: 0, count: 8)) + "/64"
    }

    /// 4 bytes for IPv4 (IPv4-mapped IPv6 included), 16 for other IPv6.
    private static func parse(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return Array(bytes[12..<16])
        }
        return bytes
    }

    private static func canonical(_ bytes: [UInt8]) -> String {
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count)) != nil
        }
        guard ok else { return bytes.map { String($0) }.joined(separator: ".") }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
