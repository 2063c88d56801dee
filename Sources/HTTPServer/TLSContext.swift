import COpenSSL

/// The server's OpenSSL context (one `SSL_CTX`, shared by every loop; OpenSSL allows concurrent `SSL_new` on
/// a configured context). TLS 1.2 minimum with ECDHE and AEAD suites only, no compression or renegotiation, ALPN
/// answers `http/1.1` only.
final class TLSContext: @unchecked Sendable {
    // @unchecked: `context` is configured in init and only read afterwards (SSL_new is thread-safe).
    let context: OpaquePointer

    init(_ configuration: TLSConfiguration) throws {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSContext.error("SSL_CTX_new") }
        context = ctx
        // From here on `deinit` frees the context, also when a later step throws.
        do {
            try TLSContext.check(
                "SSL_CTX_set_min_proto_version",
                Int32(copenssl_ssl_ctx_set_min_proto_version(ctx, TLS1_2_VERSION)))
            // SSL_OP_NO_COMPRESSION (bit 17) and SSL_OP_NO_RENEGOTIATION (bit 30): SSL_OP_BIT is a macro Swift
            // does not import.
            _ = copenssl_ssl_ctx_set_options(ctx, UInt(1 << 17) | UInt(1 << 30))
            // TLS 1.2: forward secrecy and AEAD only (ECDHE with AES-GCM or ChaCha20-Poly1305, ECDSA or RSA
            // certificates). OpenSSL's default also offers static-RSA key exchange and CBC with SHA-1 MACs. TLS 1.3's
            // suites are all ECDHE and AEAD and keep OpenSSL's default list.
            try TLSContext.check("SSL_CTX_set_cipher_list", SSL_CTX_set_cipher_list(ctx, TLSContext.tls12Ciphers))
            // Partial writes let the loop write as much as the socket takes and resume from an offset.
            _ = copenssl_ssl_ctx_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
            try TLSContext.check(
                "SSL_CTX_use_certificate_chain_file",
                SSL_CTX_use_certificate_chain_file(ctx, configuration.certificateChainPath))
            try TLSContext.check(
                "SSL_CTX_use_PrivateKey_file",
                SSL_CTX_use_PrivateKey_file(ctx, configuration.privateKeyPath, SSL_FILETYPE_PEM))
            try TLSContext.check("SSL_CTX_check_private_key", SSL_CTX_check_private_key(ctx))
            SSL_CTX_set_alpn_select_cb(
                ctx,
                { _, out, outLength, input, inputLength, _ in
                    TLSContext.selectHTTP11(out, outLength, input, inputLength)
                }, nil)
        }
    }

    deinit { SSL_CTX_free(context) }

    /// The TLS 1.2 suites offered, in OpenSSL's names: Mozilla's "intermediate" list without finite-field DHE.
    static let tls12Ciphers = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// ALPN (RFC 7301): pick `http/1.1` if offered; otherwise no ALPN at all, so a client offering only `h2`
    /// fails clearly instead of speaking HTTP/2 to an HTTP/1.1 server.
    private static func selectHTTP11(
        _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
        _ outLength: UnsafeMutablePointer<UInt8>?,
        _ input: UnsafePointer<UInt8>?, _ inputLength: UInt32
    ) -> Int32 {
        guard let input, let out, let outLength else { return SSL_TLSEXT_ERR_NOACK }
        let wanted = Array("http/1.1".utf8)
        var i = 0
        let count = Int(inputLength)
        while i < count {
            let length = Int(input[i])
            let start = i + 1
            if start + length > count { break }
            if length == wanted.count && (0..<length).allSatisfy({ input[start + $0] == wanted[$0] }) {
                out.pointee = input + start
                outLength.pointee = UInt8(length)
                return SSL_TLSEXT_ERR_OK
            }
            i = start + length
        }
        return SSL_TLSEXT_ERR_NOACK
    }

    static func check(_ operation: String, _ result: Int32) throws {
        if result != 1 { throw error(operation) }
    }

    /// Drains OpenSSL's error queue into one typed error (stale errors would otherwise surface later).
    static func error(_ operation: String) -> HTTPServerError {
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        let message = messages.isEmpty ? "unknown OpenSSL error" : messages.joined(separator: "; ")
        return HTTPServerError.invalid(operation, message)
    }
}

/// One connection's `SSL` object. Owned by its connection, used only on that connection's loop thread.
final class TLSSession {
    let ssl: OpaquePointer

    enum IOResult {
        case bytes(Int)
        case wantRead
        case wantWrite
        case closed
        case failed
    }

    init?(context: TLSContext, fd: Int32) {
        guard let ssl = SSL_new(context.context) else { return nil }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
    }

    deinit { SSL_free(ssl) }

    /// Advances the handshake: `.bytes(0)` when done.
    func handshake() -> IOResult {
        ERR_clear_error()
        let r = SSL_do_handshake(ssl)
        return r == 1 ? .bytes(0) : classify(r)
    }

    func read(_ buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        ERR_clear_error()
        let r = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        return r > 0 ? .bytes(Int(r)) : classify(r)
    }

    func write(_ buffer: UnsafeRawBufferPointer) -> IOResult {
        ERR_clear_error()
        let r = SSL_write(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        return r > 0 ? .bytes(Int(r)) : classify(r)
    }

    var pendingBytes: Int { Int(SSL_pending(ssl)) }

    /// The selected ALPN protocol, if any.
    var alpn: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Sends close_notify once; the peer's reply is not awaited.
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    private func classify(_ r: Int32) -> IOResult {
        let e = SSL_get_error(ssl, r)
        ERR_clear_error()
        switch e {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        default: return .failed
        }
    }
}
