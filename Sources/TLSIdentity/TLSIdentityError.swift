import JWTSigner

/// Why a client certificate could not be loaded. Each case says what to fix; none carries a password or key
/// material.
package enum TLSIdentityError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be read (missing, unreadable, too large).
    case unreadableFile(path: String, reason: String)
    /// The bytes are not a PKCS#12 file (truncated, PEM, something else).
    case notPKCS12(CryptoError)
    /// The PKCS#12 password is wrong (OpenSSL: "mac verify failure").
    case wrongPassword
    /// The PKCS#12 file is encrypted with an algorithm OpenSSL 3 no longer loads by default (RC2-40, as old
    /// macOS Keychain exports are): re-export it with a current algorithm.
    case legacyEncryption(CryptoError)
    /// The PKCS#12 file holds no certificate or no private key.
    case incompletePKCS12(missing: String)
    /// The text holds no PEM certificate.
    case notACertificate(CryptoError?)
    /// The PEM key could not be read (not PEM, not a key, wrong password).
    case badKey(String)
    /// The private key is encrypted and no password was configured.
    case keyNeedsPassword
    /// The private key does not belong to the certificate.
    case keyDoesNotMatchCertificate
    /// The certificate's extensions cannot be read (`X509Extensions`: not the DER shape RFC 5280 gives).
    case invalidExtensions(DERError)
    /// The certificate's APNs topics extension is malformed.
    case invalidTopicsExtension(DERError)
    /// OpenSSL failed on an otherwise valid input (allocation, encoding).
    case crypto(CryptoError)

    /// How to re-export a legacy `.p12` (also in docs/OPERATIONS.md).
    package static let reexportAdvice =
        "re-export it once: `openssl pkcs12 -legacy -in old.p12 -nodes -out tmp.pem`, "
        + "then `openssl pkcs12 -export -in tmp.pem -out new.p12`, then delete tmp.pem (it holds the unencrypted key)"

    package var description: String {
        switch self {
        case .unreadableFile(let path, let reason): return "cannot read \(path): \(reason)"
        case .notPKCS12(let error): return "not a PKCS#12 (.p12) file: \(error)"
        case .wrongPassword: return "wrong password for the PKCS#12 file (mac verify failure)"
        case .legacyEncryption:
            return "the .p12 is encrypted with a legacy algorithm (RC2-40) that OpenSSL 3 refuses; "
                + Self.reexportAdvice
        case .incompletePKCS12(let missing): return "the PKCS#12 file holds no \(missing)"
        case .notACertificate(let error):
            return "not a PEM certificate (no readable -----BEGIN CERTIFICATE----- block)"
                + (error.map { ": \($0)" } ?? "")
        case .badKey(let reason): return "cannot read the private key: \(reason)"
        case .keyNeedsPassword: return "the private key is encrypted: configure passwordFile or passwordEnv"
        case .keyDoesNotMatchCertificate: return "the private key does not belong to the certificate"
        case .invalidExtensions(let error): return "the certificate's extensions cannot be read: \(error)"
        case .invalidTopicsExtension(let error):
            return "the certificate's topics extension (\(APNsTopicsExtension.oid)) is malformed: \(error)"
        case .crypto(let error): return error.description
        }
    }
}
