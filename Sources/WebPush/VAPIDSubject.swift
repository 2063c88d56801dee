import HTTPClient

/// Why a VAPID subject was refused.
package enum VAPIDSubjectError: Error, Equatable, Sendable, CustomStringConvertible {
    case empty
    case tooLong(maxBytes: Int)
    /// A space, control or non-ASCII character.
    case invalidCharacters
    /// Neither `mailto:` nor `https:`.
    case unsupportedScheme
    /// `mailto:` without `local@domain.tld`.
    case invalidEmail
    /// `https:` that is not a URL with a host.
    case invalidURL
    /// A `localhost` address: Apple's push service answers 403 `BadJwtToken` to it.
    case localhost

    package var description: String {
        switch self {
        case .empty: return "the VAPID subject is empty"
        case .tooLong(let max): return "the VAPID subject is longer than \(max) bytes"
        case .invalidCharacters: return "the VAPID subject holds a space, control or non-ASCII character"
        case .unsupportedScheme: return "the VAPID subject must start with mailto: or https:"
        case .invalidEmail: return "the VAPID subject's mailto: address is not local@domain.tld"
        case .invalidURL: return "the VAPID subject's https: URL has no valid host"
        case .localhost: return "the VAPID subject must be a real contact, not localhost (Apple rejects it)"
        }
    }
}

/// The `sub` claim: a contact for the push service's operator (RFC 8292 §2.1), `mailto:` or `https:`.
package struct VAPIDSubject: Sendable, Equatable, CustomStringConvertible {
    package static let maxLength = 256

    package let value: String

    /// Validates a configured subject, so a placeholder fails at start-up and not as 403s from Apple.
    package init(_ text: String) throws(VAPIDSubjectError) {
        let bytes = text.utf8
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.count <= Self.maxLength else { throw .tooLong(maxBytes: Self.maxLength) }
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else { throw .invalidCharacters }
        let host: String
        if text.hasPrefix("mailto:") {
            let address = text.dropFirst("mailto:".count)
            let parts = address.split(separator: "@", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else { throw .invalidEmail }
            host = parts[1].lowercased()
            if host == "localhost" || host.hasSuffix(".localhost") { throw .localhost }
            guard host.contains("."), !host.hasPrefix("."), !host.hasSuffix("."), !host.contains("..") else {
                throw .invalidEmail
            }
        } else if text.hasPrefix("https:") {
            guard let url = try? HTTPURL(text), url.scheme == "https" else { throw .invalidURL }
            host = url.host
        } else {
            throw .unsupportedScheme
        }
        if host == "localhost" || host.hasSuffix(".localhost") { throw .localhost }
        value = text
    }

    package var description: String { value }
}
