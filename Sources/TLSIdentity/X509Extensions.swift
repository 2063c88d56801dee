/// The extensions of an X.509 certificate, read from its DER without OpenSSL: each extension's object identifier
/// (dotted) and the bytes inside its OCTET STRING.
///
/// The walk follows RFC 5280's shape: Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { … [3] EXPLICIT
/// Extensions }, … }, Extension ::= SEQUENCE { extnID OID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }.
/// Only what is needed is checked; every length goes through `DERReader`, so hostile bytes end in `DERError`.
public struct X509Extensions: Sendable, Equatable {
    /// Extension values by dotted object identifier (`1.2.840.113635.100.6.3.6`).
    public var values: [String: [UInt8]]

    /// Extensions a certificate may carry before it is refused as hostile; real ones carry about ten.
    package static let maxExtensions = 256

    private static let sequenceTag: UInt8 = 0x30
    private static let extensionsTag: UInt8 = 0xA3
    private static let oidTag: UInt8 = 0x06
    private static let booleanTag: UInt8 = 0x01
    private static let octetStringTag: UInt8 = 0x04

    package init(values: [String: [UInt8]]) {
        self.values = values
    }

    /// Reads a whole certificate's DER. A certificate without extensions (X.509 v1) has none.
    /// - Throws: `DERError`: truncation, a tag that does not fit the shape above, an extension listed twice (RFC
    ///   5280 forbids it), too many extensions, a malformed object identifier.
    public init(certificateDER der: [UInt8]) throws(DERError) {
        var outer = DERReader(der[...])
        let certificate = try Self.element(&outer, Self.sequenceTag, "the certificate")
        guard outer.isAtEnd else { throw DERError("bytes follow the certificate") }
        var certificateFields = DERReader(certificate)
        var fields = DERReader(try Self.element(&certificateFields, Self.sequenceTag, "tbsCertificate"))
        var values: [String: [UInt8]] = [:]
        while !fields.isAtEnd {
            let field = try fields.next()
            guard field.tag == Self.extensionsTag else { continue }
            var explicit = DERReader(field.value)
            var list = DERReader(try Self.element(&explicit, Self.sequenceTag, "the extensions"))
            guard explicit.isAtEnd else { throw DERError("bytes follow the extensions") }
            while !list.isAtEnd {
                guard values.count < Self.maxExtensions else {
                    throw DERError("more than \(Self.maxExtensions) extensions")
                }
                var parts = DERReader(try Self.element(&list, Self.sequenceTag, "an extension"))
                let oid = try Self.dotted(try Self.element(&parts, Self.oidTag, "an extension's identifier"))
                var value = try parts.next()
                if value.tag == Self.booleanTag { value = try parts.next() }
                guard value.tag == Self.octetStringTag else {
                    throw DERError(
                        "extension \(oid): expected an OCTET STRING, found tag 0x\(String(value.tag, radix: 16))")
                }
                guard parts.isAtEnd else { throw DERError("extension \(oid): bytes follow its value") }
                guard values.updateValue(Array(value.value), forKey: oid) == nil else {
                    throw DERError("extension \(oid) appears twice")
                }
            }
        }
        self.values = values
    }

    private static func element(_ reader: inout DERReader, _ tag: UInt8, _ what: String) throws(DERError)
        -> ArraySlice<UInt8>
    {
        let element = try reader.next()
        guard element.tag == tag else {
            throw DERError(
                "\(what): expected tag 0x\(String(tag, radix: 16)), found 0x\(String(element.tag, radix: 16))")
        }
        return element.value
    }

    /// An OBJECT IDENTIFIER's contents in dotted form: base-128 sub-identifiers, the first holding two arcs.
    static func dotted(_ bytes: ArraySlice<UInt8>) throws(DERError) -> String {
        guard !bytes.isEmpty else { throw DERError("an empty object identifier") }
        var arcs: [UInt64] = []
        var current: UInt64 = 0
        var started = false
        for byte in bytes {
            if !started && byte == 0x80 { throw DERError("an object identifier with a padded sub-identifier") }
            // 7 bits per byte: refuse before the value could leave 56 bits, far beyond any real arc.
            guard current < 1 << 49 else { throw DERError("an object identifier arc is too large") }
            current = current << 7 | UInt64(byte & 0x7F)
            started = true
            if byte & 0x80 == 0 {
                arcs.append(current)
                current = 0
                started = false
            }
        }
        guard !started, let first = arcs.first else { throw DERError("a truncated object identifier") }
        let head: [UInt64] = first < 40 ? [0, first] : first < 80 ? [1, first - 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }
}
