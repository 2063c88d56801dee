/// Why a key could not be loaded. Each case says what to fix; none carries key material.
package enum KeyLoadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be read: its path and the system's reason (`No such file or directory`).
    case unreadableFile(path: String, reason: String)
    /// The text has no `-----BEGIN …-----` line.
    case notPEM
    /// The key is passphrase-protected (`BEGIN ENCRYPTED PRIVATE KEY` or a legacy `Proc-Type: 4,ENCRYPTED`
    /// block). The server never prompts for a passphrase; store the key unencrypted with tight file permissions.
    case encrypted
    /// A key was read but it is not an EC P-256 key; `found` names it, e.g. `RSA 2048-bit` or `EC P-384`.
    case wrongKeyType(found: String)
    /// An RS256 key was expected but this is not an RSA key of at least 2048 bits (RFC 7518 §3.3); `found` names
    /// it, e.g. `EC P-256` or `RSA 1024-bit`.
    case unsuitableRSAKey(found: String)
    /// PEM text whose first block (`label`, e.g. `CERTIFICATE`) OpenSSL could not decode as the wanted key kind.
    case undecodable(label: String, CryptoError)
    /// Public-key bytes that are not a P-256 public key (coordinates of the wrong length or off the curve, or
    /// undecodable SubjectPublicKeyInfo DER).
    case invalidPublicKey(String)
    /// OpenSSL failed while handling an otherwise valid key (allocation, export).
    case crypto(CryptoError)

    package var description: String {
        switch self {
        case .unreadableFile(let path, let reason): return "cannot read key file \(path): \(reason)"
        case .notPEM: return "not a PEM key (no -----BEGIN line)"
        case .encrypted: return "the key is encrypted with a passphrase; provide an unencrypted PKCS#8 key"
        case .wrongKeyType(let found): return "expected an EC P-256 key, found \(found)"
        case .unsuitableRSAKey(let found): return "expected an RSA key of at least 2048 bits, found \(found)"
        case .undecodable(let label, let error): return "cannot decode PEM block \(label): \(error)"
        case .invalidPublicKey(let reason): return "invalid P-256 public key: \(reason)"
        case .crypto(let error): return error.description
        }
    }
}
