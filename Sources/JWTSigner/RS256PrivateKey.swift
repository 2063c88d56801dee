import COpenSSL

/// An RSA private key that signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3): the key of a Google
/// service account, which signs the OAuth2 JWT-bearer assertion for FCM HTTP v1.
///
/// Its `EVPKey` owns the OpenSSL handle; immutable, so shared by every thread that signs without a lock.
package final class RS256PrivateKey: Sendable, CustomStringConvertible {
    private let key: EVPKey

    /// Smallest modulus accepted: RFC 7518 §3.3 requires 2048 bits or more, and Google issues 2048-bit keys.
    package static let minimumBits = 2048

    /// The matching public key (derived once at load time).
    package let publicKey: RS256PublicKey

    /// Loads a PEM private key: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, the form of a service-account file's
    /// `private_key`) or PKCS#1 (`-----BEGIN RSA PRIVATE KEY-----`). Encrypted keys are refused without prompting.
    package init(pem: String) throws(KeyLoadError) {
        let key = try EVPKey.privateKey(pem: pem)
        try Self.requireRSA(key)
        // Only the public half goes to the public key object, so that it never holds the private exponent.
        publicKey = try RS256PublicKey(key.publicHalf())
        self.key = key
    }

    /// Loads a PEM private key file (see `init(pem:)`).
    package convenience init(contentsOfFile path: String) throws(KeyLoadError) {
        try self.init(pem: try PEMKeyReader.readFile(path))
    }

    /// Accepts only RSA keys (not RSA-PSS-restricted ones, which cannot do PKCS#1 v1.5) of at least `minimumBits`.
    static func requireRSA(_ key: EVPKey) throws(KeyLoadError) {
        guard EVP_PKEY_is_a(key.pointer, "RSA") == 1, key.bits >= minimumBits else {
            throw .unsuitableRSAKey(found: PEMKeyReader.describe(key.pointer))
        }
    }

    /// Signs `message` with RSASSA-PKCS1-v1_5 / SHA-256; the signature is as long as the modulus (256 bytes for
    /// 2048 bits) and is used in a JWS as it is (no DER step, unlike ES256).
    package func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let signature = try key.signSHA256(message)
        guard signature.count == key.maxSignatureSize else {
            throw CryptoError(
                operation: "EVP_DigestSign",
                messages: ["wrote \(signature.count) bytes, expected \(key.maxSignatureSize)"])
        }
        return signature
    }

    /// The modulus size in bits.
    package var bits: Int { publicKey.bits }

    /// Never prints key material.
    package var description: String { "RS256PrivateKey(RSA \(bits)-bit)" }
}
