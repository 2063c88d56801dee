import COpenSSL

/// The Swift owner of a signing or verification key's `EVP_PKEY*`, freed in `deinit`, and the OpenSSL work every
/// key type does the same way: reading PEM and DER, splitting off the public half, writing PEM, signing and
/// verifying with SHA-256, comparing. (A TLS client certificate's key is owned by `TLSIdentity`'s `OpenSSLHandle`.)
///
/// The key types (`ES256PrivateKey`, `ES256PublicKey`, `RS256PrivateKey`, `RS256PublicKey`, WebPush's
/// `P256KeyPair`) keep only what is their algorithm's own: which keys they accept and their signature format.
/// A handle is wrapped the moment OpenSSL returns it, so a key that a type then refuses is freed by `deinit`
/// rather than by a hand-written free on every error path. There is no `close()`: keys are immutable and shared
/// across threads, so an explicit free could race with a signer.
package final class EVPKey: @unchecked Sendable {
    // @unchecked Sendable: `pointer` is never mutated after init. OpenSSL 3 documents EVP_PKEY as safe to use from
    // several threads for signing, verifying, deriving and exporting when nobody modifies it; each call here has
    // its own EVP_MD_CTX or BIO.
    /// Valid while this object lives: callers pass it to OpenSSL only inside methods of an object that holds it.
    package let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    package init(owning pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Reads a SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`, what `openssl pkey -pubout` writes).
    static func publicKey(pem: String) throws(KeyLoadError) -> EVPKey {
        EVPKey(
            owning: try PEMKeyReader.readKey(pem, "PEM_read_bio_PUBKEY") { bio, callback, userData in
                PEM_read_bio_PUBKEY(bio, nil, callback, userData)
            })
    }

    /// Reads a PEM private key in any form OpenSSL decodes (PKCS#8, SEC1, PKCS#1); encrypted keys are refused
    /// without prompting.
    static func privateKey(pem: String) throws(KeyLoadError) -> EVPKey {
        EVPKey(
            owning: try PEMKeyReader.readKey(pem, "PEM_read_bio_PrivateKey") { bio, callback, userData in
                PEM_read_bio_PrivateKey(bio, nil, callback, userData)
            })
    }

    /// Decodes a DER SubjectPublicKeyInfo.
    static func publicKey(spkiDER der: [UInt8]) throws(KeyLoadError) -> EVPKey {
        ERR_clear_error()
        let key = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else {
            throw .invalidPublicKey(CryptoError.drainingQueue("d2i_PUBKEY").description)
        }
        return EVPKey(owning: key)
    }

    /// A new key holding only the public half, so a public-key object never holds the private part.
    func publicHalf() throws(KeyLoadError) -> EVPKey {
        let der: [UInt8]
        do throws(CryptoError) { der = try spkiDER() } catch { throw .crypto(error) }
        return try Self.publicKey(spkiDER: der)
    }

    /// The DER SubjectPublicKeyInfo (the public part only, also of a private key).
    func spkiDER() throws(CryptoError) -> [UInt8] {
        try derEncoded("i2d_PUBKEY") { i2d_PUBKEY(pointer, &$0) }
    }

    /// The PEM text `write` puts into a memory BIO (`PEM_write_bio_PUBKEY`, `PEM_write_bio_PrivateKey`, …);
    /// `operation` names it in the error.
    package func pem(_ operation: String, _ write: (_ bio: OpaquePointer, _ key: OpaquePointer) -> Int32)
        throws(CryptoError) -> String
    {
        let bio = try check(BIO_new(BIO_s_mem()), "BIO_new")
        defer { BIO_free(bio) }
        try check(write(bio, pointer), operation)
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            if count <= 0 { break }
            text += chunk[0..<Int(count)]
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Signs `message` with SHA-256 and the key's default padding (PKCS#1 v1.5 for RSA, which is what RS256
    /// means); returns the signature as OpenSSL writes it (DER for ECDSA), cut to the length actually written.
    func signSHA256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let context = try check(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
        defer { EVP_MD_CTX_free(context) }
        try check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pointer), "EVP_DigestSignInit")
        var length = 0
        try check(EVP_DigestSign(context, nil, &length, message, message.count), "EVP_DigestSign (size)")
        var signature = [UInt8](repeating: 0, count: length)
        try check(EVP_DigestSign(context, &signature, &length, message, message.count), "EVP_DigestSign")
        // The first call reports the maximum size (72 for a P-256 DER signature); the real one may be shorter.
        signature.removeSubrange(min(length, signature.count)...)
        return signature
    }

    /// Checks `signature` (in OpenSSL's form: DER for ECDSA) over `message` with SHA-256. Any failure is `false`.
    func verifySHA256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            OpenSSLErrorQueue.clear()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pointer) == 1,
            EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        else {
            // 0 is "does not verify", negative is an error; both leave queue entries nobody will read.
            OpenSSLErrorQueue.clear()
            return false
        }
        return true
    }

    /// Same key parameters and public part (`EVP_PKEY_eq`).
    func isEqual(to other: EVPKey) -> Bool {
        EVP_PKEY_eq(pointer, other.pointer) == 1
    }

    /// The key size in bits (the modulus for RSA, 256 for P-256).
    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// The largest signature the key makes, in bytes (exactly the modulus size for RSA PKCS#1 v1.5).
    var maxSignatureSize: Int { Int(EVP_PKEY_get_size(pointer)) }
}
