import Foundation
import TLSIdentity
import TestSupport
import XCTest

/// A certificate's extensions and Apple's environment markers, read from DER without OpenSSL: certificates made by
/// Tests/Support/apns_certificates.py, hand-built ones, and hostile bytes (truncated, wrong lengths, flipped).
final class X509ExtensionsTests: XCTestCase {
    private static let shared = Result { try APNsTestCertificates.make() }

    override class func tearDown() {
        (try? shared.get())?.remove()
    }

    /// The DER inside a PEM certificate file.
    private func der(_ name: String) throws -> [UInt8] {
        let text = try String(contentsOfFile: try Self.shared.get()[name], encoding: .utf8)
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Array(try XCTUnwrap(Data(base64Encoded: body)))
    }

    private func tlv(_ tag: UInt8, _ value: [UInt8]) -> [UInt8] {
        precondition(value.count < 0x10000)
        if value.count < 0x80 { return [tag, UInt8(value.count)] + value }
        if value.count < 0x100 { return [tag, 0x81, UInt8(value.count)] + value }
        return [tag, 0x82, UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value
    }

    /// An OBJECT IDENTIFIER's DER from its dotted form.
    private func oid(_ dotted: String) -> [UInt8] {
        let arcs = dotted.split(separator: ".").compactMap { UInt64($0) }
        var body: [UInt8] = []
        for arc in [arcs[0] * 40 + arcs[1]] + arcs.dropFirst(2) {
            var groups = [UInt8(arc & 0x7F)]
            var rest = arc >> 7
            while rest > 0 {
                groups.insert(UInt8(rest & 0x7F) | 0x80, at: 0)
                rest >>= 7
            }
            body += groups
        }
        return tlv(0x06, body)
    }

    private func ext(_ dotted: String, critical: Bool = false, value: [UInt8] = [0x05, 0x00]) -> [UInt8] {
        tlv(0x30, oid(dotted) + (critical ? [0x01, 0x01, 0xFF] : []) + tlv(0x04, value))
    }

    /// A certificate shaped like RFC 5280's (version, serial, algorithm, names, validity, key are placeholders: the
    /// reader skips them), with `extensions` as the [3] field, or none.
    private func certificate(_ extensions: [[UInt8]]?) -> [UInt8] {
        var tbs =
            tlv(0xA0, [0x02, 0x01, 0x02]) + [0x02, 0x01, 0x01] + tlv(0x30, oid("1.2.840.113549.1.1.11"))
            + tlv(0x30, []) + tlv(0x30, [0x17, 0x00, 0x17, 0x00]) + tlv(0x30, []) + tlv(0x30, [])
        if let extensions { tbs += tlv(0xA3, tlv(0x30, extensions.flatMap { $0 })) }
        return tlv(0x30, tlv(0x30, tbs) + tlv(0x30, oid("1.2.840.113549.1.1.11")) + tlv(0x03, [0x00]))
    }

    private func environments(_ der: [UInt8]) throws -> APNsCertificateEnvironments {
        APNsCertificateEnvironments(try X509Extensions(certificateDER: der))
    }

    func testReadsEachMarkerSetFromGeneratedCertificates() throws {
        XCTAssertEqual(try environments(der("cert")), .both)
        XCTAssertEqual(try environments(der("single_cert")), .sandbox)
        XCTAssertEqual(try environments(der("production_cert")), .production)
        XCTAssertEqual(try environments(der("unmarked_cert")), .none)
        let extensions = try X509Extensions(certificateDER: der("cert"))
        let topics = try APNsTopicsExtension(der: try XCTUnwrap(extensions.values[APNsTopicsExtension.oid]))
        XCTAssertEqual(topics.topics, ["com.example.app", "com.example.app.voip", "com.example.app.complication"])
        XCTAssertEqual(extensions.values[APNsCertificateEnvironments.sandboxOID], [0x05, 0x00])
        XCTAssertNotNil(extensions.values["2.5.29.19"], "basicConstraints, critical: the BOOLEAN is skipped")
    }

    func testHandBuiltCertificatesWithAndWithoutMarkers() throws {
        let sandbox = APNsCertificateEnvironments.sandboxOID
        let production = APNsCertificateEnvironments.productionOID
        XCTAssertEqual(try environments(certificate([ext(sandbox), ext(production, critical: true)])), .both)
        XCTAssertEqual(try environments(certificate([ext("2.5.29.19", critical: true), ext(production)])), .production)
        XCTAssertEqual(try environments(certificate([ext("1.2.840.113635.100.6.3.6")])), .none)
        XCTAssertEqual(try X509Extensions(certificateDER: certificate(nil)).values, [:], "a v1 certificate")
        XCTAssertEqual(try X509Extensions(certificateDER: certificate([])).values, [:])
        let large = try X509Extensions(certificateDER: certificate([ext("2.999.4294967296.1")]))
        XCTAssertEqual(Array(large.values.keys), ["2.999.4294967296.1"], "arcs above 32 bits and the 2.x form")
    }

    func testRefusesMalformedExtensionsWithoutTrapping() {
        let sandbox = APNsCertificateEnvironments.sandboxOID
        let cases: [(String, [UInt8])] = [
            ("listed twice", certificate([ext(sandbox), ext(sandbox)])),
            ("no OCTET STRING", certificate([tlv(0x30, oid(sandbox) + [0x05, 0x00])])),
            ("bytes after the value", certificate([tlv(0x30, oid(sandbox) + [0x04, 0x00, 0x05, 0x00])])),
            ("an empty identifier", certificate([tlv(0x30, [0x06, 0x00, 0x04, 0x00])])),
            ("a padded arc", certificate([tlv(0x30, [0x06, 0x03, 0x2A, 0x80, 0x01, 0x04, 0x00])])),
            ("a cut arc", certificate([tlv(0x30, [0x06, 0x02, 0x2A, 0x86, 0x04, 0x00])])),
            (
                "an arc of 70 bits",
                certificate([tlv(0x30, [0x06, 0x0B, 0x2A] + Array(repeating: 0xFF, count: 9) + [0x7F, 0x04, 0x00])])
            ),
            ("extensions not a SEQUENCE", tlv(0x30, tlv(0x30, tlv(0xA3, tlv(0x04, []))))),
            ("bytes after the certificate", certificate([ext(sandbox)]) + [0x00]),
            ("a five-byte length", [0x30, 0x85, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00]),
            ("a length past the end", [0x30, 0x82, 0xFF, 0xFF, 0x30, 0x00]),
            ("an indefinite length", [0x30, 0x80, 0x30, 0x00, 0x00, 0x00]),
            ("a multi-byte tag", [0x30, 0x03, 0x1F, 0x01, 0x00]),
            ("not a SEQUENCE", [0x31, 0x02, 0x30, 0x00]),
            ("empty", []),
        ]
        for (name, der) in cases {
            XCTAssertThrowsError(try X509Extensions(certificateDER: der), name)
        }
        let many = certificate((0...X509Extensions.maxExtensions).map { ext("1.2.3.\($0)") })
        XCTAssertThrowsError(try X509Extensions(certificateDER: many)) { error in
            XCTAssertTrue("\(error)".contains("more than 256 extensions"), "\(error)")
        }
    }

    func testEveryTruncationOfARealCertificateIsAnErrorAndNoFlippedByteTraps() throws {
        let real = try der("cert")
        for count in 0..<real.count {
            XCTAssertThrowsError(try X509Extensions(certificateDER: Array(real.prefix(count))), "\(count) bytes")
        }
        // Flipped bytes may still parse (a changed serial) or not; neither may trap or loop.
        var parsed = 0
        for index in real.indices {
            for value: UInt8 in [0x00, 0x7F, 0x80, 0x84, 0xFF] where real[index] != value {
                var bytes = real
                bytes[index] = value
                if (try? X509Extensions(certificateDER: bytes)) != nil { parsed += 1 }
            }
        }
        XCTAssertGreaterThan(parsed, 0)
    }
}
