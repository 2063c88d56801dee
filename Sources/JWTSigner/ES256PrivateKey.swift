import COpenSSL

/// An EC P-256 private key that signs ES256 (APNs provider tokens).
///
/// The one Swift owner of its `EVP_PKEY*`, freed in `deinit`. There is no `close()`: the key is immutable and
/// shared by every thread that mints tokens, so an explicit free could race with a signer.
public final class ES256PrivateKey: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: `key` is never mutated after init. OpenSSL 3 documents EVP_PKEY as safe to use from
    // several threads for signing when nobody modifies it; each `sign` call has its own EVP_MD_CTX.
    private let key: OpaquePointer

    /// The matching public key (derived once at load time).
    public let publicKey: ES256PublicKey

    /// Loads a PEM private key: PKCS#8 (`-----BEGIN PRIVATE KEY-----`, Apple's `.p8` format) or SEC1
    /// (`-----BEGIN EC PRIVATE KEY-----`). Encrypted keys are refused without prompting.
    public init(pem: String) throws(KeyLoadError) {
        let key = try PEMKeyReader.readKey(pem, "PEM_read_bio_PrivateKey") { bio, callback, userData in
            PEM_read_bio_PrivateKey(bio, nil, callback, userData)
        }
        do throws(KeyLoadError) {
            try PEMKeyReader.requireP256(key)
            let der: [UInt8]
            do throws(CryptoError) { der = try ES256PublicKey.spkiDER(of: key) } catch { throw .crypto(error) }
            // Re-import only the public half so the public key object never holds the private scalar.
            publicKey = try ES256PublicKey(spkiDER: der)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        self.key = key
    }

    /// Loads a PEM private key file, e.g. Apple's `AuthKey_<KEYID>.p8`.
    public convenience init(contentsOfFile path: String) throws(KeyLoadError) {
        try self.init(pem: try PEMKeyReader.readFile(path))
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Signs `message` with ECDSA P-256 / SHA-256 and returns the JOSE form: 64 bytes R‖S.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try ES256Signature.raw(fromDER: try signDER(message))
    }

    /// Signs `message` and returns OpenSSL's DER signature (what `openssl dgst -verify` reads).
    public func signDER(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let context = try check(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
        defer { EVP_MD_CTX_free(context) }
        try check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key), "EVP_DigestSignInit")
        var length = 0
        try check(EVP_DigestSign(context, nil, &length, message, message.count), "EVP_DigestSign (size)")
        var der = [UInt8](repeating: 0, count: length)
        try check(EVP_DigestSign(context, &der, &length, message, message.count), "EVP_DigestSign")
        // The first call reports the maximum DER size (72); the real signature is often shorter.
        der.removeSubrange(length...)
        return der
    }

    /// Never prints key material.
    public var description: String { "ES256PrivateKey(P-256)" }
}
