/// An address range in CIDR notation (`10.0.0.0/8`, `fd00::/8`); a single address is a /32 or /128.
package struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    /// The first address of the range (host bits zero).
    package let address: IPAddress
    /// Leading bits that must match: 0...32 for IPv4, 0...128 for IPv6.
    package let prefixLength: Int

    /// Why a CIDR text was refused, worded for the operator reading `check-config`.
    package enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        case notAnAddress
        case badPrefixLength(max: Int)
        case hostBitsSet(suggestion: String)

        package var description: String {
            switch self {
            case .notAnAddress: return "not an IP address or CIDR network"
            case .badPrefixLength(let max): return "the prefix length must be an integer from 0 to \(max)"
            case .hostBitsSet(let suggestion): return "has bits set after the prefix (did you mean \(suggestion)?)"
            }
        }
    }

    /// Parses `address` or `address/prefix`. Host bits after the prefix are an error, not silently cleared: a
    /// typo such as `10.1.0.0/8` would otherwise allow far more than meant.
    package init(parsing text: String) throws(ParseError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { throw .notAnAddress }
        let max = address.bytes.count * 8
        var prefix = max
        if parts.count == 2 {
            let digits = parts[1]
            guard !digits.isEmpty, digits.utf8.count <= 3, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Int(digits), value <= max
            else { throw .badPrefixLength(max: max) }
            prefix = value
        }
        let network = IPNetwork(masking: address, prefixLength: prefix)
        guard network.address == address else {
            throw .hostBitsSet(suggestion: network.description)
        }
        self = network
    }

    /// The network of `prefixLength` bits containing `address`.
    init(masking address: IPAddress, prefixLength: Int) {
        var bytes = address.bytes
        for index in bytes.indices {
            let bitsKept = min(max(prefixLength - index * 8, 0), 8)
            bytes[index] &= bitsKept == 8 ? 0xFF : ~(0xFF >> UInt8(bitsKept))
        }
        self.address = IPAddress(bytes: bytes) ?? address
        self.prefixLength = prefixLength
    }

    /// Whether `candidate` is in this range; an address of the other family never is.
    package func contains(_ candidate: IPAddress) -> Bool {
        guard candidate.bytes.count == address.bytes.count else { return false }
        return IPNetwork(masking: candidate, prefixLength: prefixLength).address == address
    }

    package var description: String { "\(address)/\(prefixLength)" }
}
