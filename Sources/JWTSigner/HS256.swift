import COpenSSL
import JSON

/// HS256 (HMAC-SHA256) compact JWS: Beams user tokens. The key is the raw bytes of the secret (Beams SDKs use the
/// instance secret's UTF-8 bytes).
package enum HS256 {
    /// The header every Beams server SDK writes.
    package static let header = #"{"alg":"HS256","typ":"JWT"}"#

    /// Signs a claims set, encoded as compact JSON with sorted keys.
    package static func sign(claims: [String: JSONValue], key: [UInt8]) throws(CryptoError) -> String {
        try sign(encodedClaims: JSONValue.object(claims).serialized(), key: key)
    }

    /// Signs a claims set with a text secret (its UTF-8 bytes are the key).
    package static func sign(claims: [String: JSONValue], secret: String) throws(CryptoError) -> String {
        try sign(claims: claims, key: Array(secret.utf8))
    }

    /// Signs claims that are already encoded (any bytes: tests use this to sign deliberately broken payloads).
    package static func sign(encodedClaims: [UInt8], key: [UInt8]) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(encodedClaims)
        let mac = try authenticationCode(Array(signingInput.utf8), key: key)
        return signingInput + "." + Base64URL.encode(mac)
    }

    /// HMAC-SHA256 of `message` (32 bytes).
    package static func authenticationCode(_ message: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try MessageAuthentication.code(EVP_sha256(), size: 32, message: message, key: key)
    }

    /// Whether `signature` is the HMAC-SHA256 of `message`, compared in constant time (CRYPTO_memcmp) so timing
    /// does not reveal how many leading bytes of a forged MAC were right.
    package static func isValid(signature: [UInt8], message: [UInt8], key: [UInt8]) -> Bool {
        guard signature.count == 32 else { return false }  // the length is public; only the content is secret
        guard let expected = try? authenticationCode(message, key: key) else {
            OpenSSLErrorQueue.clear()
            return false  // fail closed
        }
        return CRYPTO_memcmp(expected, signature, 32) == 0
    }
}
