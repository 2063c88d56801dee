import COpenSSL

/// An EC P-256 public key for verifying ES256 signatures.
///
/// The one Swift owner of its `EVP_PKEY*`, freed in `deinit`. There is no `close()`: the key is immutable and
/// shared across threads, so freeing it while another thread verifies would be a use-after-free.
public final class ES256PublicKey: @unchecked Sendable, Equatable, CustomStringConvertible {
    // @unchecked Sendable: `key` is never mutated after init, and OpenSSL 3 allows concurrent
    // EVP_DigestVerifyInit/EVP_DigestVerify on one EVP_PKEY (each call uses its own EVP_MD_CTX).
    // `package`: WebPush derives ECDH secrets with it (read-only use; this object stays its only owner).
    package let key: OpaquePointer

    /// Takes ownership of a public P-256 key handle.
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
        try self.init(validatingP256: key)
    }

    /// Loads a public-key PEM file (see `init(pem:)`).
    public convenience init(contentsOfFile path: String) throws(KeyLoadError) {
        try self.init(pem: try PEMKeyReader.readFile(path))
    }

    /// Builds the key from JWK coordinates (RFC 7518 §6.2.1: `x`, `y`, each 32 big-endian bytes).
    ///
    /// The uncompressed point `04‖x‖y` is wrapped in the fixed DER prefix of a P-256 SubjectPublicKeyInfo
    /// (SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING }), so OpenSSL's own decoder, which checks
    /// that the point is on the curve, does the work and no deprecated EC_KEY call is needed.
    public convenience init(x: [UInt8], y: [UInt8]) throws(KeyLoadError) {
        guard x.count == 32, y.count == 32 else {
            throw .invalidPublicKey("x and y must be 32 bytes each, got \(x.count) and \(y.count)")
        }
        let der = Self.spkiPrefix + [0x04] + x + y
        try self.init(spkiDER: der)
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
        try self.init(validatingP256: key)
    }

    /// Takes ownership of `key` if it is a P-256 key; frees it and throws otherwise.
    private convenience init(validatingP256 key: OpaquePointer) throws(KeyLoadError) {
        do throws(KeyLoadError) {
            try PEMKeyReader.requireP256(key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        self.init(owning: key)
    }

    /// DER of SEQUENCE { SEQUENCE { OID 1.2.840.10045.2.1, OID 1.2.840.10045.3.1.7 }, BIT STRING (66 bytes, 0 unused) }.
    private static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
        0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// The DER SubjectPublicKeyInfo.
    public func spkiDER() throws(CryptoError) -> [UInt8] {
        try Self.spkiDER(of: key)
    }

    /// DER SubjectPublicKeyInfo of any `EVP_PKEY` (public part only; used to split a private key's public half).
    static func spkiDER(of key: OpaquePointer) throws(CryptoError) -> [UInt8] {
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(key, &output)
        // Allocated by OpenSSL because *output was NULL: release with OPENSSL_free.
        defer { if let output { copenssl_free(output) } }
        guard length > 0, let output else { throw CryptoError.drainingQueue("i2d_PUBKEY") }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// The key as `-----BEGIN PUBLIC KEY-----` PEM.
    public func pem() throws(CryptoError) -> String {
        let bio = try check(BIO_new(BIO_s_mem()), "BIO_new")
        defer { BIO_free(bio) }
        try check(PEM_write_bio_PUBKEY(bio, key), "PEM_write_bio_PUBKEY")
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            if count <= 0 { break }
            text += chunk[0..<Int(count)]
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Checks a JOSE signature (64-byte R‖S) over `message`. Any malformed input is simply `false`.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard signature.count == ES256Signature.rawSize,
              let der = try? ES256Signature.der(fromRaw: signature)
        else {
            OpenSSLErrorQueue.clear()
            return false
        }
        return verify(derSignature: der, message: message)
    }

    /// Checks a DER ECDSA signature over `message` with SHA-256.
    public func verify(derSignature: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            OpenSSLErrorQueue.clear()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestVerify(context, derSignature, derSignature.count, message, message.count) == 1
        else {
            // 0 is "does not verify", negative is an error; both leave queue entries nobody will read.
            OpenSSLErrorQueue.clear()
            return false
        }
        return true
    }

    public static func == (lhs: ES256PublicKey, rhs: ES256PublicKey) -> Bool {
        EVP_PKEY_eq(lhs.key, rhs.key) == 1
    }

    public var description: String { "ES256PublicKey(P-256)" }
}
