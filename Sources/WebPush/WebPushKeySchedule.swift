import JWTSigner

/// The keys RFC 8291 §3.3-3.4 derives for one message, every intermediate kept so each step can be checked
/// against Appendix A.
package struct WebPushKeySchedule: Sendable, Equatable {
    /// `PRK_key = HMAC-SHA-256(auth_secret, ecdh_secret)`.
    package let authPseudorandomKey: [UInt8]
    /// `IKM = HMAC-SHA-256(PRK_key, "WebPush: info" ‖ 0x00 ‖ ua_public ‖ as_public ‖ 0x01)`.
    package let inputKeyMaterial: [UInt8]
    /// `PRK = HMAC-SHA-256(salt, IKM)`.
    package let pseudorandomKey: [UInt8]
    /// The content-encryption key, 16 bytes (RFC 8188 §2.2).
    package let contentEncryptionKey: [UInt8]
    /// The nonce of record 0, 12 bytes (RFC 8188 §2.3; with one record the sequence number XOR is a no-op).
    package let nonce: [UInt8]

    /// - Parameters:
    ///   - ecdhSecret: the 32-byte ECDH shared secret.
    ///   - authSecret: the subscription's 16-byte `auth`.
    ///   - subscriberPoint: `ua_public`, the subscription's 65-byte `p256dh`.
    ///   - senderPoint: `as_public`, the message's 65-byte ephemeral public key.
    ///   - salt: the message's 16-byte salt.
    package init(
        ecdhSecret: [UInt8], authSecret: [UInt8], subscriberPoint: [UInt8], senderPoint: [UInt8],
        salt: [UInt8]
    ) throws(CryptoError) {
        authPseudorandomKey = try HKDF.extract(salt: authSecret, inputKeyMaterial: ecdhSecret)
        // "WebPush: info" ‖ 0x00 ‖ ua_public ‖ as_public, and HKDF's counter 0x01, in one buffer.
        var keyInfo = [UInt8]()
        keyInfo.reserveCapacity(Self.keyInfoLabel.count + subscriberPoint.count + senderPoint.count + 1)
        keyInfo += Self.keyInfoLabel
        keyInfo += subscriberPoint
        keyInfo += senderPoint
        keyInfo.append(0x01)
        inputKeyMaterial = try HKDF.expand(
            pseudorandomKey: authPseudorandomKey, infoAndCounter: keyInfo, length: 32)
        pseudorandomKey = try HKDF.extract(salt: salt, inputKeyMaterial: inputKeyMaterial)
        contentEncryptionKey = try HKDF.expand(
            pseudorandomKey: pseudorandomKey, infoAndCounter: Self.contentEncryptionKeyInfo,
            length: AES128GCM.keySize)
        nonce = try HKDF.expand(
            pseudorandomKey: pseudorandomKey, infoAndCounter: Self.nonceInfo, length: AES128GCM.nonceSize)
    }

    /// `"WebPush: info" ‖ 0x00`.
    private static let keyInfoLabel = Array("WebPush: info".utf8) + [0x00]
    /// `"Content-Encoding: aes128gcm" ‖ 0x00`, then HKDF's counter `0x01`.
    private static let contentEncryptionKeyInfo = Array("Content-Encoding: aes128gcm".utf8) + [0x00, 0x01]
    /// `"Content-Encoding: nonce" ‖ 0x00`, then HKDF's counter `0x01`.
    private static let nonceInfo = Array("Content-Encoding: nonce".utf8) + [0x00, 0x01]
}
