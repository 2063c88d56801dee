import COpenSSL
import JWTSigner

#if canImport(Glibc)
    import Glibc
#endif

/// The OpenSSL algorithms every message's encryption uses, fetched once per process instead of once per call. By
/// name (one-shot `HMAC()`, `EVP_aes_128_gcm()`) OpenSSL 3 looks the implementation up again on every call, under
/// a global lock; RFC 8291 needs five HMACs and one AES-GCM seal per message (`WebPushBench`'s `seq:` lines,
/// docs/BENCHMARKS.md "Web Push encryption": 16.2 → 9.6 µs for the HMACs, 2.2 → 1.4 µs for the seal).
///
/// @unchecked Sendable: both pointers and the `pthread` key are set once and only read afterwards. OpenSSL 3 lets
/// many threads use one fetched `EVP_CIPHER`, and `EVP_MAC_CTX_dup` only reads the context it copies (the keyless
/// template below is never initialised with a key or updated), so every thread works on its own copy.
final class FetchedAlgorithms: @unchecked Sendable {
    /// The process's algorithms; when OpenSSL cannot fetch one, callers take the by-name path (the same result).
    static let shared = FetchedAlgorithms()

    /// AES-128-GCM, fetched; nil if the default provider does not offer it.
    let aes128GCM: OpaquePointer?
    /// An HMAC context with SHA-256 set and no key: each thread computes its MACs on a copy.
    private let hmacTemplate: OpaquePointer?

    /// Each thread's own copy of `hmacTemplate` (a `pthread` key; the copy is freed when its thread ends): one
    /// context per encryption worker, reused for every HMAC it computes, instead of a copy per HMAC (5 per message:
    /// 5.6 → 3.4 µs, bench/swift/WebPushBench).
    private let threadContexts: pthread_key_t?

    private init() {
        aes128GCM = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil)
        hmacTemplate = Self.makeHMACTemplate()
        ERR_clear_error()  // a failed fetch leaves errors that later calls must not read as theirs
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { context in
            EVP_MAC_CTX_free(OpaquePointer(context))
        }
        threadContexts = created == 0 ? key : nil
    }

    /// This thread's HMAC context, copied from `template` on the thread's first HMAC; nil without a `pthread` key
    /// (the caller then works on a copy of its own).
    private func threadContext(copying template: OpaquePointer) throws(CryptoError) -> OpaquePointer? {
        guard let threadContexts else { return nil }
        if let context = pthread_getspecific(threadContexts) { return OpaquePointer(context) }
        let context = try check(EVP_MAC_CTX_dup(template), "EVP_MAC_CTX_dup")
        guard pthread_setspecific(threadContexts, UnsafeRawPointer(context)) == 0 else {
            EVP_MAC_CTX_free(context)
            throw CryptoError(operation: "pthread_setspecific", messages: ["cannot keep the HMAC context"])
        }
        return context
    }

    private static func makeHMACTemplate() -> OpaquePointer? {
        guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else { return nil }
        defer { EVP_MAC_free(mac) }  // the context holds its own reference
        guard let context = EVP_MAC_CTX_new(mac) else { return nil }
        let set = "SHA256".withCString { name -> Int32 in
            var parameters = [
                OSSL_PARAM_construct_utf8_string("digest", UnsafeMutablePointer(mutating: name), 0),
                OSSL_PARAM_construct_end(),
            ]
            return EVP_MAC_CTX_set_params(context, &parameters)
        }
        guard set == 1 else {
            EVP_MAC_CTX_free(context)
            return nil
        }
        return context
    }

    /// HMAC-SHA256 of `message` under `key` (32 bytes).
    func hmacSHA256(_ message: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let hmacTemplate else { return try HS256.authenticationCode(message, key: key) }
        guard let context = try threadContext(copying: hmacTemplate) else {
            let copy = try check(EVP_MAC_CTX_dup(hmacTemplate), "EVP_MAC_CTX_dup")
            defer { EVP_MAC_CTX_free(copy) }
            return try Self.hmac(message, key: key, context: copy)
        }
        return try Self.hmac(message, key: key, context: context)
    }

    private static func hmac(_ message: [UInt8], key: [UInt8], context: OpaquePointer) throws(CryptoError)
        -> [UInt8]
    {
        // `EVP_MAC_init` with a key starts a new MAC whatever the context computed before.
        try check(EVP_MAC_init(context, key, key.count, nil), "EVP_MAC_init")
        try check(EVP_MAC_update(context, message, message.count), "EVP_MAC_update")
        var output = [UInt8](repeating: 0, count: 32)
        var length = 0
        try check(EVP_MAC_final(context, &output, &length, output.count), "EVP_MAC_final")
        guard length == 32 else { throw CryptoError(operation: "EVP_MAC_final", messages: ["\(length) bytes"]) }
        return output
    }
}
