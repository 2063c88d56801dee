/// Why a browser's push subscription was refused. Subscriptions come from anonymous browsers, so every case
/// names the field and the rule, never echoing more than a length.
package enum WebPushSubscriptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A subscription field.
    package enum Field: String, Sendable, Equatable {
        case endpoint, p256dh, auth
    }

    /// The field is longer than `maxBytes` (checked before any decoding).
    case tooLong(Field, maxBytes: Int)
    /// `p256dh` or `auth` is not base64url (RFC 4648 §5; trailing `=` padding is tolerated).
    case notBase64URL(Field)
    /// The decoded key has the wrong size.
    case wrongLength(Field, expected: Int, found: Int)
    /// `p256dh` does not start with 0x04 (compressed or hybrid points are not what RFC 8291 specifies).
    case notUncompressedPoint
    /// `p256dh` is not a point on P-256.
    case notOnCurve
    /// The endpoint holds a space, a control character or a non-ASCII byte.
    case endpointHasInvalidCharacters
    /// The endpoint is not a URL libcurl can parse (the reason from `HTTPURL`).
    case invalidEndpoint(String)
    /// The endpoint is not `https` (RFC 8030 §8: push messages travel over TLS).
    case endpointNotHTTPS
    /// The endpoint carries `user:password@`.
    case endpointHasCredentials
    /// The endpoint carries a `#fragment`.
    case endpointHasFragment

    package var description: String {
        switch self {
        case .tooLong(let field, let max): return "\(field.rawValue) is longer than \(max) bytes"
        case .notBase64URL(let field): return "\(field.rawValue) is not base64url"
        case .wrongLength(let field, let expected, let found):
            return "\(field.rawValue) must decode to \(expected) bytes, got \(found)"
        case .notUncompressedPoint: return "p256dh must be an uncompressed P-256 point (first byte 0x04)"
        case .notOnCurve: return "p256dh is not a point on P-256"
        case .endpointHasInvalidCharacters: return "endpoint holds a space, control or non-ASCII character"
        case .invalidEndpoint(let reason): return "endpoint \(reason)"
        case .endpointNotHTTPS: return "endpoint must be an https URL"
        case .endpointHasCredentials: return "endpoint must not carry credentials"
        case .endpointHasFragment: return "endpoint must not carry a fragment"
        }
    }
}
