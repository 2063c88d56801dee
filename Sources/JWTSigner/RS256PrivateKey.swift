import COpenSSL

/// An RSA private key that signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3): the key of a Google
/// service account, which signs the OAuth2 JWT-bearer assertion for FCM HTTP v1.
///
/// The one Swift owner of its `EVP_PKEY*`, freed in `deinit`. There is no `close()`: the key is immutable and
/// shared by every thread that signs, so an explicit free could race with a signer.
public final class RS256PrivateKey: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: `key` is never mutated after init. OpenSSL 3 documents EVP_PKEY as safe to use from
    // several threads for signing when nobody modifies it; each `sign` call has its own EVP_MD_CTX.
    private let key: OpaquePointer

    /// Smallest modulus accepted: RFC 7518 §3.3 requires 2048 bits or more, and Google issues 2048-bit keys.
    public static let minimumBits = 2048

    /// The matching public key (derived once at load time).
    public let publicKey: RS256PublicKey

    /// Loads a PEM private key: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, the form of a service-account file's
    /// `private_key`) or PKCS#1 (`-----BEGIN RSA PRIVATE KEY-----`). Encrypted keys are refused without prompting.
    public init(pem: String) throws(KeyLoadError) {
        let key = try PEMKeyReader.readKey(pem, "PEM_read_bio_PrivateKey") { bio, callback, userData in
            PEM_read_bio_PrivateKey(bio, nil, callback, userData)
        }
        do throws(KeyLoadError) {
            try Self.requireRSA(key)
            let der: [UInt8]
            do throws(CryptoError) { der = try ES256PublicKey.spkiDER(of: key) } catch { throw .crypto(error) }
            // Re-import only the public half so the public key object never holds the private exponent.
            publicKey = try RS256PublicKey(spkiDER: der)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        self.key = key
    }

    /// Loads a PEM private key file (see `init(pem:)`).
    public convenience init(contentsOfFile path: String) throws(KeyLoadError) {
        try self.init(pem: try PEMKeyReader.readFile(path))
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Accepts only RSA keys (not RSA-PSS-restricted ones, which cannot do PKCS#1 v1.5) of at least `minimumBits`.
    static func requireRSA(_ key: OpaquePointer) throws(KeyLoadError) {
        guard EVP_PKEY_is_a(key, "RSA") == 1, EVP_PKEY_get_bits(key) >= Int32(minimumBits) else {
            throw .unsuitableRSAKey(found: PEMKeyReader.describe(key))
        }
    }

    /// Signs `message` with RSASSA-PKCS1-v1_5 / SHA-256; the signature is as long as the modulus (256 bytes for
    /// 2048 bits) and is used in a JWS as it is (no DER step, unlike ES256).
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let context = try check(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
        defer { EVP_MD_CTX_free(context) }
        // An RSA key's default padding is PKCS#1 v1.5, which is what RS256 means.
        try check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key), "EVP_DigestSignInit")
        var length = 0
        try check(EVP_DigestSign(context, nil, &length, message, message.count), "EVP_DigestSign (size)")
        var signature = [UInt8](repeating: 0, count: length)
        try check(EVP_DigestSign(context, &signature, &length, message, message.count), "EVP_DigestSign")
        guard length == signature.count else {
            throw CryptoError(operation: "EVP_DigestSign", messages: ["wrote \(length) bytes, expected \(signature.count)"])
        }
        return signature
    }

    /// The modulus size in bits.
    public var bits: Int { publicKey.bits }

    /// Never prints key material.
    public var description: String { "RS256PrivateKey(RSA \(bits)-bit)" }
}
