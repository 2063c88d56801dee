import JWTSigner

/// HKDF with SHA-256 (RFC 5869), limited to outputs of at most one hash block, which is all RFC 8291 needs
/// (32-byte IKM, 16-byte key, 12-byte nonce): expand is then a single HMAC over `info ‖ 0x01`. The HMACs run on
/// the process's fetched HMAC (`FetchedAlgorithms`), not OpenSSL's by-name one-shot `HMAC()`.
package enum HKDF {
    /// `HKDF-Extract(salt, IKM)` = HMAC-SHA256(key: salt, message: IKM).
    package static func extract(salt: [UInt8], inputKeyMaterial: [UInt8]) throws(CryptoError) -> [UInt8] {
        try FetchedAlgorithms.shared.hmacSHA256(inputKeyMaterial, key: salt)
    }

    /// `HKDF-Expand(PRK, info, L)` for `L` in 1...32: the first `L` bytes of HMAC-SHA256(PRK, info ‖ 0x01).
    package static func expand(pseudorandomKey: [UInt8], info: [UInt8], length: Int) throws(CryptoError) -> [UInt8] {
        guard (1...32).contains(length) else {
            throw CryptoError(operation: "HKDF.expand", messages: ["length \(length) outside 1...32"])
        }
        var withCounter = info
        withCounter.append(0x01)
        return try expand(pseudorandomKey: pseudorandomKey, infoAndCounter: withCounter, length: length)
    }

    /// `expand` with `info ‖ 0x01` already assembled (the key schedule keeps its constant labels that way, so a
    /// message pays no concatenation for them).
    static func expand(pseudorandomKey: [UInt8], infoAndCounter: [UInt8], length: Int) throws(CryptoError)
        -> [UInt8]
    {
        guard (1...32).contains(length) else {
            throw CryptoError(operation: "HKDF.expand", messages: ["length \(length) outside 1...32"])
        }
        var output = try FetchedAlgorithms.shared.hmacSHA256(infoAndCounter, key: pseudorandomKey)
        output.removeLast(32 - length)
        return output
    }
}
