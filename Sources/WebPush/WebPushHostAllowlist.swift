import HTTPClient

/// Which push-service hosts a Web Push message may go to. Subscription endpoints come from anonymous browsers,
/// so they are untrusted URLs: by default only the push services browsers actually use are allowed (checked on the
/// URL's host at registration and before anything is sent), on top of the address rules (`DestinationPolicy`)
/// checked at connect time.
///
/// Port rule: an endpoint must use port 443 (every public push service does), unless its pattern names another
/// port (`push.internal:8443`, `*.push.example:8443`): a host that answers on 443 cannot be made to hold connection
/// attempts on a port that drops them.
package struct WebPushHostAllowlist: Sendable, Equatable, CustomStringConvertible {
    /// One allowed host: exact (`web.push.apple.com`) or every subdomain of a suffix (`*.notify.windows.com`),
    /// each with `:port` when the port is not 443 (`127.0.0.1:8443`).
    package enum Pattern: Sendable, Hashable, CustomStringConvertible {
        case exact(String)
        case subdomains(of: String)

        package var description: String {
            switch self {
            case .exact(let host): return host
            case .subdomains(let suffix): return "*." + suffix
            }
        }
    }

    /// Why a pattern text was refused.
    package enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        case invalid(String)

        package var description: String {
            switch self {
            case .invalid(let text):
                return
                    "\"\(text)\" is not a host name or *.suffix (letters, digits, '-' and '.'; the suffix needs a dot), with an optional :port"
            }
        }
    }

    /// Chrome (FCM's Web Push endpoint), Firefox (Mozilla autopush), Safari (Apple) and Edge (Windows Push
    /// Notification Services).
    package static let knownPushServices = WebPushHostAllowlist(patterns: [
        .exact("fcm.googleapis.com"), .subdomains(of: "push.services.mozilla.com"), .exact("web.push.apple.com"),
        .subdomains(of: "notify.windows.com"),
    ])

    package var patterns: [Pattern]

    package init(patterns: [Pattern]) {
        self.patterns = patterns
    }

    /// Parses `host.example` or `*.example.com` per entry, each optionally followed by `:port` (1-65535; `:443`
    /// is the same as none).
    package init(parsing texts: [String]) throws(ParseError) {
        var patterns: [Pattern] = []
        for text in texts {
            var lower = text.lowercased()
            if let colon = lower.lastIndex(of: ":") {
                guard let port = Int(lower[lower.index(after: colon)...]), (1...65535).contains(port) else {
                    throw .invalid(text)
                }
                lower = String(lower[..<colon]) + (port == 443 ? "" : ":\(port)")
            }
            let host = lower.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            if lower.hasPrefix("*.") {
                let suffix = String(host.dropFirst(2))
                guard Self.isHostName(suffix), suffix.contains(".") else { throw .invalid(text) }
                patterns.append(.subdomains(of: String(lower.dropFirst(2))))
            } else {
                guard Self.isHostName(host) else { throw .invalid(text) }
                patterns.append(.exact(lower))
            }
        }
        self.patterns = patterns
    }

    /// Whether `host` (an `HTTPURL.host`: lower case) on port 443 may be sent to.
    package func allows(_ host: String) -> Bool { pattern(matching: host) != nil }

    /// The pattern that allows `url`'s host and port (see the port rule above), nil when none does.
    package func pattern(for url: HTTPURL) -> Pattern? {
        pattern(matching: url.port == 443 ? url.host : "\(url.host):\(url.port)")
    }

    /// The first pattern that allows `host` (with `:port` when the port is not 443): the push service it belongs
    /// to (the sender's share of its window is per service, so the many hosts of `*.notify.windows.com` share
    /// one). nil when no pattern allows it.
    package func pattern(matching host: String) -> Pattern? {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return patterns.first { pattern in
            switch pattern {
            case .exact(let allowed): return name == allowed
            case .subdomains(let suffix): return name.hasSuffix("." + suffix) && name.utf8.count > suffix.utf8.count + 1
            }
        }
    }

    package var description: String { patterns.map(\.description).joined(separator: ", ") }

    private static func isHostName(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253, !host.hasPrefix("."), !host.hasSuffix("."), !host.contains("..")
        else {
            return false
        }
        return host.utf8.allSatisfy { byte in
            (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x2E
        }
    }
}
