import COpenSSL

/// An RSA public key that verifies RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3).
///
/// The one Swift owner of its `EVP_PKEY*`, freed in `deinit`; immutable, so shared across threads without a lock.
public final class RS256PublicKey: @unchecked Sendable, Equatable, CustomStringConvertible {
    // @unchecked Sendable: `key` is never mutated after init, and OpenSSL 3 allows concurrent
    // EVP_DigestVerifyInit/EVP_DigestVerify on one EVP_PKEY (each call uses its own EVP_MD_CTX).
    let key: OpaquePointer

    /// Takes ownership of a public RSA key handle that `RS256PrivateKey.requireRSA` accepted.
    init(owning key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Loads a SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`, what `openssl pkey -pubout` writes).
    public convenience init(pem: String) throws(KeyLoadError) {
        let key = try PEMKeyReader.readKey(pem, "PEM_read_bio_PUBKEY") { bio, callback, userData in
            PEM_read_bio_PUBKEY(bio, nil, callback, userData)
        }
        try self.init(validating: key)
    }

    /// Loads a DER SubjectPublicKeyInfo.
    public convenience init(spkiDER der: [UInt8]) throws(KeyLoadError) {
        ERR_clear_error()
        let key = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else {
            throw .invalidPublicKey(CryptoError.drainingQueue("d2i_PUBKEY").description)
        }
        try self.init(validating: key)
    }

    /// Takes ownership of `key` if it is a usable RSA key; frees it and throws otherwise.
    private convenience init(validating key: OpaquePointer) throws(KeyLoadError) {
        do throws(KeyLoadError) {
            try RS256PrivateKey.requireRSA(key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        self.init(owning: key)
    }

    /// The DER SubjectPublicKeyInfo.
    public func spkiDER() throws(CryptoError) -> [UInt8] {
        try ES256PublicKey.spkiDER(of: key)
    }

    /// The modulus size in bits (2048 for Google's service-account keys).
    public var bits: Int { Int(EVP_PKEY_get_bits(key)) }

    /// Checks an RS256 signature over `message`. Any malformed input (wrong length included) is simply `false`.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        // PKCS#1 v1.5 signatures are exactly the modulus size; OpenSSL checks it too, this just skips the work.
        guard signature.count == Int(EVP_PKEY_get_size(key)) else { return false }
        guard let context = EVP_MD_CTX_new() else {
            OpenSSLErrorQueue.clear()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        // An RSA key's default padding is PKCS#1 v1.5, which is what RS256 means (PS256 would be PSS).
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        else {
            // 0 is "does not verify", negative is an error; both leave queue entries nobody will read.
            OpenSSLErrorQueue.clear()
            return false
        }
        return true
    }

    public static func == (lhs: RS256PublicKey, rhs: RS256PublicKey) -> Bool {
        EVP_PKEY_eq(lhs.key, rhs.key) == 1
    }

    /// Never prints key material.
    public var description: String { "RS256PublicKey(RSA \(bits)-bit)" }
}
