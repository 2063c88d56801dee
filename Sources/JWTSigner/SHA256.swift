import COpenSSL

/// SHA-256 through OpenSSL: the digest scoped API keys are stored as (docs/SECURITY.md, "API keys").
package enum SHA256 {
    /// The 32-byte digest of `message`.
    package static func hash(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        try check(EVP_Digest(message, message.count, &digest, &length, EVP_sha256(), nil), "EVP_Digest")
        guard length == 32 else { throw CryptoError(operation: "EVP_Digest", messages: ["digest of \(length) bytes"]) }
        return digest
    }

    /// The digest as 64 lower-case hex digits.
    package static func hex(_ message: [UInt8]) throws(CryptoError) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in try hash(message) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Bytes from OpenSSL's CSPRNG (`RAND_bytes`), for key material.
package enum SecureRandom {
    package static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try check(RAND_bytes(&bytes, Int32(count)), "RAND_bytes")
        return bytes
    }
}
