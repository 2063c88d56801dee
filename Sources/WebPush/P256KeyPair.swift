import COpenSSL
import JWTSigner

/// A P-256 key pair for ECDH: the per-message sender key of RFC 8291 §3.1, and the source of new VAPID keys.
///
/// Its `EVPKey` (Sources/JWTSigner) owns the OpenSSL handle; immutable, so shared across threads without a lock.
package final class P256KeyPair: Sendable, CustomStringConvertible {
    private let key: EVPKey

    /// The public key as the 65-byte uncompressed point `04‖x‖y` (SEC 1 §2.3.3), the form RFC 8291 puts on the wire.
    package let publicPoint: [UInt8]

    /// Takes `key` if its public point can be read (freed with it otherwise).
    private init(_ key: EVPKey) throws(CryptoError) {
        publicPoint = try P256Point.uncompressed(of: key)
        self.key = key
    }

    /// A fresh random key pair (`EVP_PKEY_generate` on the P-256 group). RFC 8291 §3.1 wants a new one per message.
    ///
    /// The context comes from a P-256 parameters key made once (`parameters`): naming the algorithm and the group
    /// per key instead builds the group again every time, about 45 % of a key generation (bench/swift/WebPushBench).
    package static func generate() throws(CryptoError) -> P256KeyPair {
        let context: OpaquePointer
        if let parameters {
            context = try check(EVP_PKEY_CTX_new_from_pkey(nil, parameters.pointer, nil), "EVP_PKEY_CTX_new_from_pkey")
        } else {
            context = try check(EVP_PKEY_CTX_new_from_name(nil, "EC", nil), "EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        try check(EVP_PKEY_keygen_init(context), "EVP_PKEY_keygen_init")
        if parameters == nil { try check(EVP_PKEY_CTX_set_group_name(context, "P-256"), "EVP_PKEY_CTX_set_group_name") }
        var key: OpaquePointer?
        try check(EVP_PKEY_generate(context, &key), "EVP_PKEY_generate")
        return try P256KeyPair(EVPKey(owning: check(key, "EVP_PKEY_generate")))
    }

    /// The P-256 domain parameters as an `EVP_PKEY`, shared read-only by every thread (OpenSSL 3 allows concurrent
    /// use of an unmodified key); nil if OpenSSL cannot make them, and `generate` then names the group per key.
    private static let parameters: EVPKey? = {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_paramgen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_paramgen(context, &key) == 1, let key
        else {
            ERR_clear_error()
            return nil
        }
        return EVPKey(owning: key)
    }()

    /// The key pair with this private scalar (32 big-endian bytes), e.g. RFC 8291 Appendix A's sender key.
    ///
    /// The scalar is wrapped in a fixed SEC 1 `ECPrivateKey` DER (version 1, the scalar, the P-256 OID, no public
    /// key) so OpenSSL's own decoder validates it and computes the public point; no deprecated EC_KEY call.
    package convenience init(privateScalar: [UInt8]) throws(CryptoError) {
        guard privateScalar.count == 32 else {
            throw CryptoError(
                operation: "P256KeyPair(privateScalar:)", messages: ["expected 32 bytes, got \(privateScalar.count)"])
        }
        let der = Self.sec1Prefix + privateScalar + Self.sec1Suffix
        ERR_clear_error()
        let key = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PrivateKey(EVP_PKEY_EC, nil, &cursor, buffer.count)
        }
        try self.init(EVPKey(owning: check(key, "d2i_PrivateKey")))
    }

    /// SEQUENCE (49 bytes) { INTEGER 1, OCTET STRING (32 bytes) … }.
    private static let sec1Prefix: [UInt8] = [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20]
    /// … [0] { OID 1.2.840.10045.3.1.7 (prime256v1) } }.
    private static let sec1Suffix: [UInt8] = [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]

    /// The 32-byte ECDH shared secret with `peer` (the x coordinate of the shared point, RFC 8291 §3.1).
    ///
    /// The peer is not validated again: an `ES256PublicKey` only exists for a point OpenSSL's decoder accepted as
    /// on the curve, and the re-check `EVP_PKEY_derive_set_peer` does would cost about as much as the derivation
    /// (bench/swift/WebPushBench).
    package func sharedSecret(with peer: ES256PublicKey) throws(CryptoError) -> [UInt8] {
        let context = try check(EVP_PKEY_CTX_new(key.pointer, nil), "EVP_PKEY_CTX_new")
        defer { EVP_PKEY_CTX_free(context) }
        try check(EVP_PKEY_derive_init(context), "EVP_PKEY_derive_init")
        try check(EVP_PKEY_derive_set_peer_ex(context, peer.key.pointer, 0), "EVP_PKEY_derive_set_peer_ex")
        var length = 0
        try check(EVP_PKEY_derive(context, nil, &length), "EVP_PKEY_derive (size)")
        var secret = [UInt8](repeating: 0, count: length)
        try check(EVP_PKEY_derive(context, &secret, &length), "EVP_PKEY_derive")
        guard length == 32, secret.count == 32 else {
            throw CryptoError(operation: "EVP_PKEY_derive", messages: ["produced \(length) bytes, expected 32"])
        }
        return secret
    }

    /// The private key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), what `VAPIDKeyPair` loads.
    package func pkcs8PEM() throws(CryptoError) -> String {
        try key.pem("PEM_write_bio_PrivateKey") { bio, pkey in
            PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil)
        }
    }

    /// Never prints key material.
    package var description: String { "P256KeyPair(public: \(Base64URL.encode(publicPoint)))" }
}

/// Uncompressed P-256 points (SEC 1 §2.3.3) to and from OpenSSL keys.
enum P256Point {
    /// Size of `04‖x‖y`.
    static let size = 65

    /// The uncompressed public point of any P-256 key (public or private).
    static func uncompressed(of key: EVPKey) throws(CryptoError) -> [UInt8] {
        var point = [UInt8](repeating: 0, count: size)
        var length = 0
        try check(
            EVP_PKEY_get_octet_string_param(key.pointer, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, &point, size, &length),
            "EVP_PKEY_get_octet_string_param(encoded-pub-key)")
        guard length == size, point[0] == 0x04 else {
            throw CryptoError(
                operation: "EVP_PKEY_get_octet_string_param", messages: ["not a 65-byte uncompressed point"])
        }
        return point
    }
}

extension ES256PublicKey {
    /// The key from a 65-byte uncompressed point `04‖x‖y`; OpenSSL rejects points that are not on the curve.
    ///
    /// Imported with `EVP_PKEY_fromdata` (the P-256 group and the encoded point; OpenSSL decodes the point and
    /// refuses one off the curve), about 6× cheaper than a SubjectPublicKeyInfo through OpenSSL 3's decoder
    /// (bench/swift/WebPushBench): every Web Push delivery past the parsed-subscription cache pays it.
    package convenience init(uncompressedPoint point: [UInt8]) throws(KeyLoadError) {
        guard point.count == P256Point.size, point[0] == 0x04 else {
            throw .invalidPublicKey("expected a 65-byte uncompressed point starting with 0x04")
        }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            ERR_clear_error()
            throw .invalidPublicKey("EVP_PKEY_CTX_new_from_name(EC) failed")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var encoded = point
        // An OSSL_PARAM keeps pointers to its name and value, so both must outlive the call that fills it: Swift's
        // temporary C strings for String arguments do not. One buffer: "group", "pub" (OSSL_PKEY_PARAM_GROUP_NAME,
        // OSSL_PKEY_PARAM_PUB_KEY) and the group's name, each NUL-terminated.
        var names = Array("group\u{0}pub\u{0}prime256v1\u{0}".utf8).map { CChar(bitPattern: $0) }
        var imported: OpaquePointer?
        let status = encoded.withUnsafeMutableBytes { bytes in
            names.withUnsafeMutableBufferPointer { text -> Int32 in
                guard let base = text.baseAddress, EVP_PKEY_fromdata_init(context) == 1 else { return 0 }
                var params = [
                    OSSL_PARAM_construct_utf8_string(base, base + 10, 0),
                    OSSL_PARAM_construct_octet_string(base + 6, bytes.baseAddress, bytes.count),
                    OSSL_PARAM_construct_end(),
                ]
                return EVP_PKEY_fromdata(context, &imported, Self.publicKeySelection, &params)
            }
        }
        guard status == 1, let imported else {
            ERR_clear_error()
            throw .invalidPublicKey("not a point on P-256")
        }
        try self.init(EVPKey(owning: imported))
    }

    /// `EVP_PKEY_PUBLIC_KEY` (a compound macro Swift does not import): the domain parameters and the public key.
    private static let publicKeySelection = Int32(
        OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS
            | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)

    /// The key as the 65-byte uncompressed point (what browsers and VAPID's `k` parameter carry).
    package func uncompressedPoint() throws(CryptoError) -> [UInt8] {
        try P256Point.uncompressed(of: key)
    }
}
