import JWTSigner

/// The text of a scoped key, `psk_<id>_<secret>`: a recognisable prefix (secret scanners and people spot a leaked
/// one), a 12-character public id the server looks the key up by, and 43 base62 characters (about 256 bits from
/// `RAND_bytes`) that only the holder knows. The server keeps SHA-256 of the secret part, never the text.
package struct ScopedKeyText: Sendable, Equatable {
    package static let prefix = "psk_"
    static let idLength = 12
    static let secretLength = 43
    static let idAlphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
    static let secretAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    package var id: String
    package var secret: String

    /// The whole key, as shown once to its holder.
    package var text: String { "\(Self.prefix)\(id)_\(secret)" }

    /// Whether `presented` claims to be a scoped key (then it is never compared with the Beams secret).
    package static func looksScoped(_ presented: String) -> Bool { presented.hasPrefix(prefix) }

    /// Splits a presented key. - Returns: nil when it is not exactly `psk_` + 12 id characters + `_` + 43 base62.
    package static func parse(_ presented: String) -> ScopedKeyText? {
        let bytes = Array(presented.utf8)
        let idStart = prefix.utf8.count
        let separator = idStart + idLength
        guard bytes.count == separator + 1 + secretLength, presented.hasPrefix(prefix),
            bytes[separator] == UInt8(ascii: "_")
        else { return nil }
        let id = bytes[idStart..<separator]
        let secret = bytes[(separator + 1)...]
        guard id.allSatisfy(idAlphabet.contains), secret.allSatisfy(secretAlphabet.contains) else { return nil }
        return ScopedKeyText(id: String(decoding: id, as: UTF8.self), secret: String(decoding: secret, as: UTF8.self))
    }

    /// A new key from the CSPRNG.
    package static func generate() throws(CryptoError) -> ScopedKeyText {
        ScopedKeyText(id: try randomText(idLength, idAlphabet), secret: try randomText(secretLength, secretAlphabet))
    }

    /// The stored form of the secret part: lower-case hex SHA-256.
    package var digest: String {
        get throws(CryptoError) { try SHA256.hex(Array(secret.utf8)) }
    }

    /// `count` characters drawn uniformly from `alphabet` (bytes at or above the largest multiple of its size are
    /// thrown away, so no character is likelier than another).
    static func randomText(_ count: Int, _ alphabet: [UInt8]) throws(CryptoError) -> String {
        let limit = 256 - 256 % alphabet.count
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            for byte in try SecureRandom.bytes(count * 2) where Int(byte) < limit && out.count < count {
                out.append(alphabet[Int(byte) % alphabet.count])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
