/// The topics an APNs client certificate is valid for: the value of its extension `1.2.840.113635.100.6.3.6`.
///
/// The shape (not documented by Apple; the one Apple's certificates and Pushy's test certificates carry, see
/// docs/APNS.md): a SEQUENCE in which every topic is a UTF8String followed by a SEQUENCE of UTF8String kinds
/// (`app`, `voip`, `complication`). Pure parsing of untrusted bytes: no OpenSSL, no file.
public struct APNsTopicsExtension: Sendable, Equatable {
    /// The extension's object identifier.
    public static let oid = "1.2.840.113635.100.6.3.6"

    /// One topic and what kinds of push it covers.
    package struct Entry: Sendable, Equatable {
        package var topic: String
        package var kinds: [String]

        package init(topic: String, kinds: [String]) {
            self.topic = topic
            self.kinds = kinds
        }
    }

    /// In certificate order.
    package var entries: [Entry]

    /// The topic names in certificate order.
    package var topics: [String] { entries.map(\.topic) }

    package init(entries: [Entry]) {
        self.entries = entries
    }

    /// Entries the extension may hold before it is refused as hostile; real certificates list a handful.
    package static let maxEntries = 256

    private static let sequenceTag: UInt8 = 0x30
    private static let utf8StringTag: UInt8 = 0x0C

    /// Parses the extension's value (the DER inside its OCTET STRING).
    /// - Throws: `DERError` naming what is wrong: truncation, a tag other than SEQUENCE/UTF8String, kinds
    ///   before any topic, invalid UTF-8, bytes after the outer SEQUENCE, too many entries.
    public init(der: [UInt8]) throws(DERError) {
        var outer = DERReader(der[...])
        let sequence = try outer.next()
        guard sequence.tag == Self.sequenceTag else {
            throw DERError("expected a SEQUENCE, found tag 0x\(String(sequence.tag, radix: 16))")
        }
        guard outer.isAtEnd else { throw DERError("bytes follow the topics SEQUENCE") }
        var entries: [Entry] = []
        var reader = DERReader(sequence.value)
        while !reader.isAtEnd {
            let element = try reader.next()
            switch element.tag {
            case Self.utf8StringTag:
                guard entries.count < Self.maxEntries else { throw DERError("more than \(Self.maxEntries) topics") }
                entries.append(Entry(topic: try Self.utf8(element.value), kinds: []))
            case Self.sequenceTag:
                guard !entries.isEmpty else { throw DERError("a SEQUENCE of kinds comes before any topic") }
                var kinds = DERReader(element.value)
                while !kinds.isAtEnd {
                    let kind = try kinds.next()
                    guard kind.tag == Self.utf8StringTag else {
                        throw DERError("a kind is not a UTF8String (tag 0x\(String(kind.tag, radix: 16)))")
                    }
                    guard entries[entries.count - 1].kinds.count < Self.maxEntries else {
                        throw DERError("more than \(Self.maxEntries) kinds")
                    }
                    entries[entries.count - 1].kinds.append(try Self.utf8(kind.value))
                }
            default:
                throw DERError("unexpected tag 0x\(String(element.tag, radix: 16)) in the topics SEQUENCE")
            }
        }
        self.entries = entries
    }

    private static func utf8(_ bytes: ArraySlice<UInt8>) throws(DERError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw DERError("a string is not valid UTF-8") }
        return text
    }
}
