import TLSIdentity
import XCTest

/// The topics extension's DER, parsed without files or OpenSSL.
final class APNsTopicsExtensionTests: XCTestCase {
    private func tlv(_ tag: UInt8, _ value: [UInt8]) -> [UInt8] {
        precondition(value.count < 0x10000)
        if value.count < 0x80 { return [tag, UInt8(value.count)] + value }
        if value.count < 0x100 { return [tag, 0x81, UInt8(value.count)] + value }
        return [tag, 0x82, UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value
    }

    private func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    private func sequence(_ parts: [[UInt8]]) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }

    func testParsesTopicsWithTheirKindsInOrder() throws {
        let der = sequence([
            utf8("com.example.app"), sequence([utf8("app")]),
            utf8("com.example.app.voip"), sequence([utf8("voip")]),
            utf8("com.example.app.complication"), sequence([utf8("complication")]),
        ])
        let parsed = try APNsTopicsExtension(der: der)
        XCTAssertEqual(
            parsed.entries,
            [
                .init(topic: "com.example.app", kinds: ["app"]),
                .init(topic: "com.example.app.voip", kinds: ["voip"]),
                .init(topic: "com.example.app.complication", kinds: ["complication"]),
            ])
        XCTAssertEqual(parsed.topics, ["com.example.app", "com.example.app.voip", "com.example.app.complication"])
    }

    func testParsesATopicWithoutKindsAndLongFormLengths() throws {
        let long = String(repeating: "a", count: 300)
        let parsed = try APNsTopicsExtension(der: sequence([utf8(long), utf8("b")]))
        XCTAssertEqual(parsed.entries, [.init(topic: long, kinds: []), .init(topic: "b", kinds: [])])
    }

    func testAcceptsAnEmptySequence() throws {
        XCTAssertEqual(try APNsTopicsExtension(der: [0x30, 0x00]).entries, [])
    }

    func testRejectsKindsBeforeAnyTopic() {
        XCTAssertThrowsError(try APNsTopicsExtension(der: sequence([sequence([utf8("app")])]))) { error in
            XCTAssertTrue("\(error)".contains("before any topic"), "\(error)")
        }
    }

    func testRejectsEveryTruncationWithoutTrapping() {
        let der = sequence([utf8("com.example.app"), sequence([utf8("app"), utf8("voip")])])
        for length in 0..<der.count {
            XCTAssertThrowsError(try APNsTopicsExtension(der: Array(der.prefix(length))), "prefix \(length)")
        }
    }

    func testRejectsTrailingBytesWrongTagsAndBadUTF8() {
        XCTAssertThrowsError(try APNsTopicsExtension(der: sequence([utf8("a")]) + [0x00]))
        XCTAssertThrowsError(try APNsTopicsExtension(der: utf8("not a sequence")))
        XCTAssertThrowsError(try APNsTopicsExtension(der: sequence([tlv(0x16, Array("ia5".utf8))])))
        XCTAssertThrowsError(try APNsTopicsExtension(der: sequence([utf8("a"), sequence([tlv(0x02, [1])])])))
        XCTAssertThrowsError(try APNsTopicsExtension(der: sequence([tlv(0x0C, [0xC3, 0x28])])))
    }

    func testRejectsLengthsThatClaimMoreThanIsThereOrUseTooManyBytes() {
        XCTAssertThrowsError(try APNsTopicsExtension(der: [0x30, 0x84, 0x7F, 0xFF, 0xFF, 0xFF]))
        XCTAssertThrowsError(try APNsTopicsExtension(der: [0x30, 0x89, 1, 1, 1, 1, 1, 1, 1, 1, 1]))
        XCTAssertThrowsError(try APNsTopicsExtension(der: [0x30, 0x80]))  // indefinite length: not DER
        XCTAssertThrowsError(try APNsTopicsExtension(der: [0x1F, 0x01, 0x00]))  // multi-byte tag
    }

    func testRejectsMoreEntriesThanTheBound() {
        let many = sequence(Array(repeating: utf8("t"), count: APNsTopicsExtension.maxEntries + 1))
        XCTAssertThrowsError(try APNsTopicsExtension(der: many)) { XCTAssertTrue("\($0)".contains("more than")) }
    }
}
