/// Reads DER TLVs (tag, definite length, value) from untrusted bytes: every length is checked against what is
/// left, so truncated or hostile input ends in `DERError`, never a trap.
struct DERReader {
    /// One element: its tag byte and the bounds of its value in the reader's bytes.
    struct Element {
        var tag: UInt8
        var value: ArraySlice<UInt8>
    }

    private let bytes: ArraySlice<UInt8>
    private var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    var isAtEnd: Bool { position >= bytes.endIndex }

    /// The next element. Only single-byte tags and definite lengths of up to four bytes: DER allows nothing
    /// else for the structures read here, and a longer length could not fit in an extension anyway.
    mutating func next() throws(DERError) -> Element {
        guard position < bytes.endIndex else { throw DERError("truncated: an element was expected") }
        let tag = bytes[position]
        if tag & 0x1F == 0x1F { throw DERError("multi-byte tags are not supported") }
        position += 1
        guard position < bytes.endIndex else { throw DERError("truncated: the length is missing") }
        let first = bytes[position]
        position += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count >= 1, count <= 4 else { throw DERError("unsupported length of \(count) bytes") }
            guard bytes.endIndex - position >= count else { throw DERError("truncated: the length is cut off") }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[position])
                position += 1
            }
        }
        guard bytes.endIndex - position >= length else {
            throw DERError("truncated: an element of \(length) bytes has only \(bytes.endIndex - position) left")
        }
        let value = bytes[position..<position + length]
        position += length
        return Element(tag: tag, value: value)
    }
}

/// Why DER bytes could not be read.
public struct DERError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String

    package init(_ description: String) {
        self.description = description
    }
}
