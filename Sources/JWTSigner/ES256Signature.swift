import COpenSSL

/// Conversions between OpenSSL's DER ECDSA signatures and JOSE's fixed 64-byte R‖S form (RFC 7518 §3.4).
package enum ES256Signature {
    /// Size of a JOSE ES256 signature: R and S, each left-padded to 32 bytes.
    package static let rawSize = 64

    /// DER `SEQUENCE { r INTEGER, s INTEGER }` (70–72 bytes, sometimes fewer) → R‖S.
    ///
    /// R or S can be shorter than 32 bytes (a leading zero byte is dropped in DER about once in 128 signatures);
    /// `BN_bn2binpad` restores the left padding. Trailing bytes after the DER structure are rejected.
    package static func raw(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        var consumed = 0
        let signature = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            let parsed = d2i_ECDSA_SIG(nil, &cursor, buffer.count)
            if let cursor, let base = buffer.baseAddress { consumed = cursor - base }
            return parsed
        }
        let parsed = try check(signature, "d2i_ECDSA_SIG")
        defer { ECDSA_SIG_free(parsed) }
        guard consumed == der.count else {
            throw CryptoError(
                operation: "d2i_ECDSA_SIG", messages: ["\(der.count - consumed) bytes after the DER signature"])
        }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(parsed, &r, &s)
        var raw = [UInt8](repeating: 0, count: rawSize)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            (BN_bn2binpad(r, buffer.baseAddress, 32), BN_bn2binpad(s, buffer.baseAddress! + 32, 32))
        }
        guard written == (32, 32) else {
            throw CryptoError(
                operation: "BN_bn2binpad", messages: ["R or S is longer than 32 bytes"] + OpenSSLErrorQueue.drain())
        }
        return raw
    }

    /// R‖S (exactly 64 bytes) → DER, for OpenSSL's verifier.
    package static func der(fromRaw raw: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard raw.count == rawSize else {
            throw CryptoError(
                operation: "ES256Signature.der(fromRaw:)", messages: ["expected 64 bytes, got \(raw.count)"])
        }
        let signature = try check(ECDSA_SIG_new(), "ECDSA_SIG_new")
        defer { ECDSA_SIG_free(signature) }
        let r = try check(BN_bin2bn(raw, 32, nil), "BN_bin2bn")
        let s: OpaquePointer
        do {
            s = try check(raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }, "BN_bin2bn")
        } catch {
            BN_free(r)
            throw error
        }
        // ECDSA_SIG_set0 takes ownership of r and s only when it succeeds; on failure they are still ours to free.
        // After success, ECDSA_SIG_free(signature) above releases them.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            throw CryptoError.drainingQueue("ECDSA_SIG_set0")
        }
        return try derEncoded("i2d_ECDSA_SIG") { i2d_ECDSA_SIG(signature, &$0) }
    }
}
