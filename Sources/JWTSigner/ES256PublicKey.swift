import COpenSSL

/// An EC P-256 public key for verifying ES256 signatures.
///
/// Its `EVPKey` owns the OpenSSL handle; immutable, so shared across threads without a lock.
package final class ES256PublicKey: Sendable, Equatable, CustomStringConvertible {
    /// `package`: WebPush derives ECDH secrets with it (read-only use; this object stays its only owner).
    package let key: EVPKey

    /// Takes `key` if it is a P-256 key (freed with it otherwise). `package`: WebPush imports browser keys from raw
    /// points (`ES256PublicKey(uncompressedPoint:)`).
    package init(_ key: EVPKey) throws(KeyLoadError) {
        try PEMKeyReader.requireP256(key.pointer)
        self.key = key
    }

    /// Loads a SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`, what `openssl pkey -pubout` writes).
    package convenience init(pem: String) throws(KeyLoadError) {
        try self.init(EVPKey.publicKey(pem: pem))
    }

    /// Loads a public-key PEM file (see `init(pem:)`).
    package convenience init(contentsOfFile path: String) throws(KeyLoadError) {
        try self.init(pem: try PEMKeyReader.readFile(path))
    }

    /// Builds the key from JWK coordinates (RFC 7518 §6.2.1: `x`, `y`, each 32 big-endian bytes).
    ///
    /// The uncompressed point `04‖x‖y` is wrapped in the fixed DER prefix of a P-256 SubjectPublicKeyInfo
    /// (SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING }), so OpenSSL's own decoder, which checks
    /// that the point is on the curve, does the work and no deprecated EC_KEY call is needed.
    package convenience init(x: [UInt8], y: [UInt8]) throws(KeyLoadError) {
        guard x.count == 32, y.count == 32 else {
            throw .invalidPublicKey("x and y must be 32 bytes each, got \(x.count) and \(y.count)")
        }
        let der = Self.spkiPrefix + [0x04] + x + y
        try self.init(spkiDER: der)
    }

    /// Loads a DER SubjectPublicKeyInfo.
    package convenience init(spkiDER der: [UInt8]) throws(KeyLoadError) {
        try self.init(EVPKey.publicKey(spkiDER: der))
    }

    /// DER of SEQUENCE { SEQUENCE { OID 1.2.840.10045.2.1, OID 1.2.840.10045.3.1.7 }, BIT STRING (66 bytes, 0 unused) }.
    private static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
        0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// The DER SubjectPublicKeyInfo.
    package func spkiDER() throws(CryptoError) -> [UInt8] {
        try key.spkiDER()
    }

    /// The key as `-----BEGIN PUBLIC KEY-----` PEM.
    package func pem() throws(CryptoError) -> String {
        try key.pem("PEM_write_bio_PUBKEY") { bio, pkey in PEM_write_bio_PUBKEY(bio, pkey) }
    }

    /// Checks a JOSE signature (64-byte R‖S) over `message`. Any malformed input is simply `false`.
    package func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard signature.count == ES256Signature.rawSize,
            let der = try? ES256Signature.der(fromRaw: signature)
        else {
            OpenSSLErrorQueue.clear()
            return false
        }
        return verify(derSignature: der, message: message)
    }

    /// Checks a DER ECDSA signature over `message` with SHA-256.
    package func verify(derSignature: [UInt8], message: [UInt8]) -> Bool {
        key.verifySHA256(signature: derSignature, message: message)
    }

    package static func == (lhs: ES256PublicKey, rhs: ES256PublicKey) -> Bool {
        lhs.key.isEqual(to: rhs.key)
    }

    package var description: String { "ES256PublicKey(P-256)" }
}
