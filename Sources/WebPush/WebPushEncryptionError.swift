import JWTSigner

/// Why a message could not be encrypted.
package enum WebPushEncryptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An injected salt that is not 16 bytes.
    case invalidSaltLength(Int)
    /// Negative padding.
    case invalidPadding(Int)
    /// The record (plaintext + delimiter + padding + 16-byte tag) does not fit the record size: RFC 8291 §4 allows
    /// exactly one record.
    case recordTooLarge(needed: Int, recordSize: UInt32)
    /// The encrypted body would exceed the 4096 bytes every push service must accept (RFC 8291 §4).
    case bodyTooLarge(Int)
    /// OpenSSL failed (key generation, ECDH, HMAC or AES-GCM).
    case crypto(CryptoError)

    package var description: String {
        switch self {
        case .invalidSaltLength(let count): return "salt must be 16 bytes, got \(count)"
        case .invalidPadding(let count): return "padding must not be negative, got \(count)"
        case .recordTooLarge(let needed, let recordSize):
            return "one record needs \(needed) bytes but the record size is \(recordSize)"
        case .bodyTooLarge(let size):
            return
                "the encrypted body would be \(size) bytes, over the \(WebPushEncryption.maxBodySize) a push service must accept"
        case .crypto(let error): return error.description
        }
    }
}
