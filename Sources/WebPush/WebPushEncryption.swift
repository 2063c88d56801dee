import COpenSSL
import JWTSigner

/// The encrypted body of one push message and the header that names its content coding.
package struct WebPushEncryptedBody: Sendable, Equatable {
    /// `salt(16) ‖ rs(4, big-endian) ‖ idlen(1) = 65 ‖ as_public(65) ‖ ciphertext ‖ tag(16)` (RFC 8188 §2.1).
    package let body: [UInt8]
    /// `Content-Encoding: aes128gcm`.
    package let headers: [WebPushHeader]
}

/// Message encryption for Web Push: RFC 8291 on top of the `aes128gcm` content coding of RFC 8188.
package enum WebPushEncryption {
    /// The only content coding RFC 8291 allows.
    package static let contentEncoding = "aes128gcm"
    /// The usual record size; with one record per message it only has to exceed the record.
    package static let defaultRecordSize: UInt32 = 4096
    /// `salt ‖ rs ‖ idlen ‖ keyid` with a 65-byte keyid.
    package static let headerSize = 16 + 4 + 1 + P256Point.size
    /// The largest body every push service must accept (RFC 8291 §4).
    package static let maxBodySize = 4096
    /// Plaintext + padding that fits `maxBodySize`: 4096 − 86 (header) − 16 (tag) − 1 (delimiter) = 3993.
    package static let maxPlaintextSize = maxBodySize - headerSize - AES128GCM.tagSize - 1
    /// `Content-Encoding: aes128gcm`, the headers of every encrypted body.
    static let contentEncodingHeaders = [WebPushHeader(name: "Content-Encoding", value: contentEncoding)]
    /// The salt length RFC 8188 §2.1 fixes.
    package static let saltSize = 16

    /// Encrypts `plaintext` for one subscriber.
    ///
    /// - Parameters:
    ///   - plaintext: the message (for Beams, the service worker's JSON).
    ///   - keys: the subscription's `p256dh` and `auth`.
    ///   - paddingLength: zero bytes after the delimiter, to hide the plaintext length.
    ///   - recordSize: the `rs` header field.
    ///   - senderKey: the ephemeral ECDH key; `nil` generates one. Inject only in tests: reusing a key or salt
    ///     across messages reuses the AES-GCM key and nonce.
    ///   - salt: 16 bytes; `nil` draws them from `RAND_bytes`. Inject only in tests (see `senderKey`).
    /// - Throws: `WebPushEncryptionError`; the body is never larger than `maxBodySize`.
    package static func encrypt(
        _ plaintext: [UInt8], for keys: WebPushSubscriberKeys, paddingLength: Int = 0,
        recordSize: UInt32 = defaultRecordSize, senderKey: P256KeyPair? = nil, salt: [UInt8]? = nil
    ) throws(WebPushEncryptionError) -> WebPushEncryptedBody {
        guard paddingLength >= 0 else { throw .invalidPadding(paddingLength) }
        // A huge padding must not overflow the sums below.
        let (content, overflow) = plaintext.count.addingReportingOverflow(paddingLength)
        guard !overflow, content <= maxBodySize else {
            throw .bodyTooLarge(overflow ? Int.max : headerSize + content + 17)
        }
        let record = content + 1 + AES128GCM.tagSize
        guard record <= Int(recordSize) else { throw .recordTooLarge(needed: record, recordSize: recordSize) }
        guard headerSize + record <= maxBodySize else { throw .bodyTooLarge(headerSize + record) }
        if let salt, salt.count != saltSize { throw .invalidSaltLength(salt.count) }
        do throws(CryptoError) {
            // `??` autoclosures are rethrows-untyped, so plain `if let` keeps the error type.
            // The message key: fresh per message, at the EC_POINT level (`P256Curve`) unless a test injects one or
            // OpenSSL could not build the curve (then an EVP key pair, the same result at a higher cost).
            let senderPoint: [UInt8]
            let ecdhSecret: [UInt8]
            if senderKey == nil, let point = keys.point, let curve = P256Curve.shared {
                (senderPoint, ecdhSecret) = try curve.agreement(with: point)
            } else {
                let sender: P256KeyPair
                if let senderKey { sender = senderKey } else { sender = try P256KeyPair.generate() }
                (senderPoint, ecdhSecret) = (sender.publicPoint, try sender.sharedSecret(with: keys.evpPublicKey()))
            }
            let messageSalt: [UInt8]
            if let salt { messageSalt = salt } else { messageSalt = try randomBytes(saltSize) }
            let schedule = try WebPushKeySchedule(
                ecdhSecret: ecdhSecret, authSecret: keys.authSecret, subscriberPoint: keys.publicPoint,
                senderPoint: senderPoint, salt: messageSalt)
            // RFC 8188 §2: the last (here: only) record ends its plaintext with the delimiter 0x02, then padding.
            var padded = plaintext
            padded.append(0x02)
            padded += [UInt8](repeating: 0, count: paddingLength)
            let sealed = try AES128GCM.seal(padded, key: schedule.contentEncryptionKey, nonce: schedule.nonce)
            var body = [UInt8]()
            body.reserveCapacity(headerSize + sealed.count)
            body += messageSalt
            for shift: UInt32 in [24, 16, 8, 0] { body.append(UInt8(truncatingIfNeeded: recordSize >> shift)) }
            body.append(UInt8(P256Point.size))
            body += senderPoint
            body += sealed
            return WebPushEncryptedBody(body: body, headers: contentEncodingHeaders)
        } catch {
            throw .crypto(error)
        }
    }

    /// `count` bytes from OpenSSL's CSPRNG.
    static func randomBytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try check(RAND_bytes(&bytes, Int32(count)), "RAND_bytes")
        return bytes
    }
}
