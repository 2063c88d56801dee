/// Why a base64url text was rejected.
package enum Base64URLError: Error, Equatable, Sendable {
    /// A byte outside `A–Z a–z 0–9 - _` (padding `=` included: JOSE forbids it) at this UTF-8 offset.
    case invalidCharacter(offset: Int)
    /// A length of 4n+1 characters, which no byte string encodes to.
    case impossibleLength(Int)
    /// The last character carries set bits below the encoded data; a conforming encoder never writes that, so
    /// accepting it would let one signature have several spellings.
    case nonCanonicalEnding
}

/// Base64url without padding (RFC 4648 §5, as JOSE uses it: RFC 7515 §2).
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Maps a byte to its 6-bit value, or 0xFF when it is not in the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()

    /// Encodes bytes without padding.
    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            output.append(alphabet[Int(first >> 2)])
            output.append(alphabet[Int((first & 0x03) << 4 | (second ?? 0) >> 4)])
            guard let second else { break }
            output.append(alphabet[Int((second & 0x0F) << 2 | (third ?? 0) >> 6)])
            guard let third else { break }
            output.append(alphabet[Int(third & 0x3F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Encodes the UTF-8 bytes of a string without padding.
    package static func encode(_ text: String) -> String {
        encode(Array(text.utf8))
    }

    /// Decodes strictly: only the URL-safe alphabet, no padding, no whitespace, canonical final character.
    package static func decode(_ text: some StringProtocol) throws(Base64URLError) -> [UInt8] {
        try decode(utf8: Array(text.utf8))
    }

    /// Decodes the UTF-8 bytes of a base64url text (see `decode(_:)`).
    package static func decode(utf8 text: some Collection<UInt8>) throws(Base64URLError) -> [UInt8] {
        let count = text.count
        var output: [UInt8] = []
        output.reserveCapacity(count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for (offset, character) in text.enumerated() {
            let value = values[Int(character)]
            if value == 0xFF { throw .invalidCharacter(offset: offset) }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Checked after the characters so that a stray `=` or space is reported as such, not as a length.
        if count % 4 == 1 { throw .impossibleLength(count) }
        // Left-over bits (2 or 4) are padding inside the last character and must be zero.
        if accumulator != 0 { throw .nonCanonicalEnding }
        return output
    }
}
