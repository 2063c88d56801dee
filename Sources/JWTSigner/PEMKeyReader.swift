import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// Shared plumbing for loading PEM keys: memory BIOs, the refusing passphrase callback, key-kind checks and
/// file reading with errno text. `package`: TLSIdentity reads the PEM key of a client certificate through it.
package enum PEMKeyReader {
    /// OpenSSL's `pem_password_cb`: fills `buf` with a passphrase and returns its length, or -1 to refuse.
    package typealias PasswordCallback =
        @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32

    /// Largest key file read; a PEM key is a few hundred bytes, so anything bigger is the wrong file.
    static let maxFileSize = 64 * 1024

    /// Reads a whole key file, reporting the path and the system's reason on failure.
    static func readFile(_ path: String) throws(KeyLoadError) -> String {
        String(decoding: try KeyFile.read(path, maxSize: maxFileSize, kind: "a PEM key"), as: UTF8.self)
    }

    /// The label of the first PEM block (`PRIVATE KEY`, `CERTIFICATE`, …), or `nil` if there is none.
    package static func firstLabel(_ pem: String) -> String? {
        let bytes = Array(pem.utf8)
        guard let begin = find(Array("-----BEGIN ".utf8), in: bytes, from: 0) else { return nil }
        let labelStart = begin + 11
        guard let end = find(Array("-----".utf8), in: bytes, from: labelStart) else { return nil }
        return String(decoding: bytes[labelStart..<end], as: UTF8.self)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        for index in start...(haystack.count - needle.count)
        where haystack[index..<index + needle.count].elementsEqual(needle) {
            return index
        }
        return nil
    }

    /// Runs `body` with a read-only memory BIO holding a copy of `text` (a copy, so no borrowed pointer has to
    /// outlive a `withCString` scope).
    package static func withBIO<Result>(
        _ text: String, _ body: (OpaquePointer) throws(KeyLoadError) -> Result
    ) throws(KeyLoadError) -> Result {
        let bio: OpaquePointer
        do {
            bio = try check(BIO_new(BIO_s_mem()), "BIO_new")
        } catch {
            throw .crypto(error)
        }
        defer { BIO_free(bio) }
        let bytes = Array(text.utf8)
        guard BIO_write(bio, bytes, Int32(bytes.count)) == Int32(bytes.count) else {
            throw .crypto(CryptoError.drainingQueue("BIO_write"))
        }
        return try body(bio)
    }

    /// Reads a key with `read`, passing a passphrase callback that always refuses (so OpenSSL never prompts on
    /// the terminal) and notes that it was asked, which is how an encrypted key is told apart from a broken one.
    package static func readKey(
        _ pem: String,
        _ operation: String,
        _ read: (OpaquePointer, PasswordCallback, UnsafeMutableRawPointer) -> OpaquePointer?
    ) throws(KeyLoadError) -> OpaquePointer {
        guard let label = firstLabel(pem) else { throw .notPEM }
        ERR_clear_error()
        let asked = UnsafeMutablePointer<Bool>.allocate(capacity: 1)
        asked.initialize(to: false)
        defer { asked.deallocate() }
        let key = try withBIO(pem) { bio throws(KeyLoadError) in
            read(
                bio,
                { _, _, _, userData in
                    userData?.storeBytes(of: true, as: Bool.self)
                    return -1
                }, UnsafeMutableRawPointer(asked))
        }
        guard let key else {
            let error = CryptoError.drainingQueue(operation)
            if asked.pointee || label.contains("ENCRYPTED") || pem.contains("Proc-Type: 4,ENCRYPTED") {
                throw .encrypted
            }
            throw .undecodable(label: label, error)
        }
        return key
    }

    /// Accepts only EC keys on P-256 (prime256v1); the bit count alone would also let secp256k1 through.
    static func requireP256(_ key: OpaquePointer) throws(KeyLoadError) {
        if EVP_PKEY_is_a(key, "EC") == 1, curveName(key) == "prime256v1" { return }
        throw .wrongKeyType(found: describe(key))
    }

    /// `RSA 2048-bit`, `EC P-384`, `EC secp256k1`, `ED25519 256-bit`.
    package static func describe(_ key: OpaquePointer) -> String {
        let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown key type"
        if EVP_PKEY_is_a(key, "EC") == 1 {
            let curve = curveName(key) ?? "unknown curve"
            let friendly = ["prime256v1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"][curve] ?? curve
            return "EC \(friendly)"
        }
        return "\(type) \(EVP_PKEY_get_bits(key))-bit"
    }

    private static func curveName(_ key: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
