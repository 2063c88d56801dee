/// An RSA public key that verifies RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3).
///
/// Its `EVPKey` owns the OpenSSL handle; immutable, so shared across threads without a lock.
package final class RS256PublicKey: Sendable, Equatable, CustomStringConvertible {
    let key: EVPKey

    /// Takes `key` if it is a usable RSA key (`RS256PrivateKey.requireRSA`; freed with it otherwise).
    init(_ key: EVPKey) throws(KeyLoadError) {
        try RS256PrivateKey.requireRSA(key)
        self.key = key
    }

    /// Loads a SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`, what `openssl pkey -pubout` writes).
    package convenience init(pem: String) throws(KeyLoadError) {
        try self.init(EVPKey.publicKey(pem: pem))
    }

    /// Loads a DER SubjectPublicKeyInfo.
    package convenience init(spkiDER der: [UInt8]) throws(KeyLoadError) {
        try self.init(EVPKey.publicKey(spkiDER: der))
    }

    /// The DER SubjectPublicKeyInfo.
    package func spkiDER() throws(CryptoError) -> [UInt8] {
        try key.spkiDER()
    }

    /// The modulus size in bits (2048 for Google's service-account keys).
    package var bits: Int { key.bits }

    /// Checks an RS256 signature over `message`. Any malformed input (wrong length included) is simply `false`.
    package func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        // PKCS#1 v1.5 signatures are exactly the modulus size; OpenSSL checks it too, this just skips the work.
        guard signature.count == key.maxSignatureSize else { return false }
        // An RSA key's default padding is PKCS#1 v1.5, which is what RS256 means (PS256 would be PSS).
        return key.verifySHA256(signature: signature, message: message)
    }

    package static func == (lhs: RS256PublicKey, rhs: RS256PublicKey) -> Bool {
        lhs.key.isEqual(to: rhs.key)
    }

    /// Never prints key material.
    package var description: String { "RS256PublicKey(RSA \(bits)-bit)" }
}
