/// A key that verifies tokens; its kind must match the algorithm the caller expects.
package enum JWTVerificationKey: Sendable {
    /// An HMAC secret's raw bytes (HS256).
    case hs256(key: [UInt8])
    /// An EC P-256 public key (ES256).
    case es256(ES256PublicKey)

    /// An HS256 key from a text secret: its UTF-8 bytes, as every Beams SDK uses them.
    package static func hs256(secret: String) -> JWTVerificationKey {
        .hs256(key: Array(secret.utf8))
    }

    /// The algorithm this key verifies.
    package var algorithm: JWTAlgorithm {
        switch self {
        case .hs256: return .hs256
        case .es256: return .es256
        }
    }
}
