/// Which addresses an outbound request may connect to: public unicast addresses, plus what the operator allows.
///
/// Judged on the address a socket is about to connect to, after DNS resolution (`HTTPExchangeConfiguration.policy`), so a
/// name that resolves to 127.0.0.1 or rebinds between a check and the connect cannot reach internal services.
package struct DestinationPolicy: Sendable, Equatable {
    /// One operator allowance: a host name (exact, case-insensitive) or an address range.
    package enum Allowance: Sendable, Hashable, CustomStringConvertible {
        case host(String)
        case network(IPNetwork)

        /// Why an allowance text was refused.
        package enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
            case network(IPNetwork.ParseError)
            case notAHostName

            package var description: String {
                switch self {
                case .network(let error): return "\(error)"
                case .notAHostName:
                    return
                        "must be an IP address, a CIDR network (10.0.0.0/8) or a host name (letters, digits, '-' and '.')"
                }
            }
        }

        /// Parses `10.0.0.0/8`, `127.0.0.1`, `::1`, `fd00::/8` or `hooks.internal`.
        package init(parsing text: String) throws(ParseError) {
            if text.contains("/") || IPAddress(text) != nil {
                do {
                    self = .network(try IPNetwork(parsing: text))
                } catch {
                    throw .network(error)
                }
                return
            }
            guard let host = DestinationPolicy.normalizedHost(text), Self.isHostName(host) else { throw .notAHostName }
            self = .host(host)
        }

        private static func isHostName(_ host: String) -> Bool {
            guard host.utf8.count <= 253, !host.hasPrefix("."), !host.contains("..") else { return false }
            return host.utf8.allSatisfy { byte in
                (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x2E
            }
        }

        package var description: String {
            switch self {
            case .host(let host): return host
            case .network(let network): return network.description
            }
        }
    }

    /// The verdict on one address.
    package enum Verdict: Sendable, Equatable {
        case allowed
        /// Refused, with the range that explains why.
        case refused(SpecialAddressRange)
    }

    package var allowances: [Allowance]

    /// The default refuses every special-purpose range.
    package init(allowances: [Allowance] = []) {
        self.allowances = allowances
    }

    /// Judges the address a connection is about to use.
    /// - Parameters:
    ///   - address: the resolved address (IPv4-mapped IPv6 is judged as the IPv4 address it reaches).
    ///   - host: the URL's host name as the request names it, for host allowances.
    package func verdict(for address: IPAddress, host: String) -> Verdict {
        let address = address.mappedIPv4 ?? address
        guard let special = SpecialAddressRange.containing(address) else { return .allowed }
        if special.treatment == .neverAllowed { return .refused(special) }
        if isAllowed(address, host: host) { return .allowed }
        if case .embedsIPv4(let offset) = special.treatment, let embedded = address.embeddedIPv4(at: offset) {
            // A translator delivers these to the embedded IPv4 address: the verdict is that address's.
            return verdict(for: embedded, host: host)
        }
        return .refused(special)
    }

    private func isAllowed(_ address: IPAddress, host: String) -> Bool {
        let name = Self.normalizedHost(host)
        return allowances.contains { allowance in
            switch allowance {
            case .host(let allowed): return name == allowed
            case .network(let network): return network.contains(address)
            }
        }
    }

    /// Lower case without a trailing dot (`Hooks.Internal.` names the same host as `hooks.internal`); nil if empty.
    static func normalizedHost(_ host: String) -> String? {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name.isEmpty ? nil : name
    }
}
