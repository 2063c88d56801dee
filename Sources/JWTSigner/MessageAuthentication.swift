import COpenSSL

/// HMAC with a chosen digest, through OpenSSL's one-shot `HMAC()`.
enum MessageAuthentication {
    /// - Parameters:
    ///   - digest: `EVP_sha256()`, `EVP_sha1()`, …
    ///   - size: the digest's output length in bytes.
    static func code(_ digest: OpaquePointer?, size: Int, message: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8]
    {
        var output = [UInt8](repeating: 0, count: size)
        var length: UInt32 = 0
        // A one-element buffer stands in for an empty key: some OpenSSL paths treat a NULL key as "no key".
        let keyBytes = key.isEmpty ? [0] : key
        _ = try check(HMAC(digest, keyBytes, Int32(key.count), message, message.count, &output, &length), "HMAC")
        guard Int(length) == size else {
            throw CryptoError(operation: "HMAC", messages: ["produced \(length) bytes, expected \(size)"])
        }
        return output
    }
}

/// HMAC-SHA1, which Beams webhooks use for their `Webhook-Signature` header (hex of the MAC over the raw body).
package enum HMACSHA1 {
    /// The 20-byte MAC of `message`.
    package static func authenticationCode(_ message: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try MessageAuthentication.code(EVP_sha1(), size: 20, message: message, key: key)
    }

    /// Lower-case hex of the MAC.
    package static func hex(_ message: [UInt8], key: [UInt8]) throws(CryptoError) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in try authenticationCode(message, key: key) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// HMAC-SHA256, which Standard Webhooks signatures use (`webhook-signature: v1,<base64 MAC>`).
package enum HMACSHA256 {
    /// The 32-byte MAC of `message`.
    package static func authenticationCode(_ message: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try MessageAuthentication.code(EVP_sha256(), size: 32, message: message, key: key)
    }
}
