/// The JWS algorithms this module signs and verifies (RFC 7518 §3.1 names).
package enum JWTAlgorithm: String, Sendable, Equatable, CaseIterable {
    /// HMAC with SHA-256: Beams user tokens, keyed with the instance secret.
    case hs256 = "HS256"
    /// ECDSA P-256 with SHA-256: APNs provider tokens.
    case es256 = "ES256"
}
