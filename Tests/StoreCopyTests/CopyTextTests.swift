import Foundation
import XCTest

@testable import StoreCopy

/// PostgreSQL's COPY text format as the store move writes and reads it.
final class CopyTextTests: XCTestCase {
    private func line(_ row: [PortableValue]) -> [UInt8] {
        var output: [UInt8] = []
        CopyText.appendRow(row, to: &output)
        return output
    }

    private func fields(_ text: [UInt8]) -> [[UInt8]?] {
        text.withUnsafeBytes { CopyText.fields($0) }
    }

    func testARowIsTabSeparatedWithBackslashNForNullAndEndsInANewline() {
        let text = String(
            decoding: line([.integer(-7), .null, .text("x"), .boolean(true), .boolean(false)]), as: UTF8.self)
        XCTAssertEqual(text, "-7\t\\N\tx\tt\tf\n")
    }

    func testTextWithTabsNewlinesAndBackslashesRoundTrips() throws {
        let tricky = "a\tb\nc\rd\\e \\N \u{1F600} \"q\""
        var written = line([.text(tricky), .text("")])
        written.removeLast()
        let read = fields(written)
        XCTAssertEqual(read.count, 2)
        XCTAssertEqual(try CopyText.value(read[0], as: .text, table: "t", column: "c"), .text(tricky))
        XCTAssertEqual(try CopyText.value(read[1], as: .text, table: "t", column: "c"), .text(""))
    }

    func testBytesAreWrittenAsAnEscapedByteaHexLiteral() {
        XCTAssertEqual(String(decoding: line([.bytes(Data([0x00, 0xAB, 0x5C]))]), as: UTF8.self), "\\\\x00ab5c\n")
    }

    func testListsAreWrittenAsQuotedArrayLiterals() {
        XCTAssertEqual(CopyText.arrayLiteral([]), "{}")
        XCTAssertEqual(
            CopyText.arrayLiteral(["a", "b,c", "q\"uote", "back\\slash", "NULL"]),
            "{\"a\",\"b,c\",\"q\\\"uote\",\"back\\\\slash\",\"NULL\"}")
    }

    func testEveryEscapePostgreSQLMaySendIsDecoded() {
        let read = fields(Array("\\b\\f\\n\\r\\t\\v\\\\\t\\101\\x41\\x4\t\\N".utf8))
        XCTAssertEqual(read.count, 3)
        XCTAssertEqual(read[0], [0x08, 0x0C, 0x0A, 0x0D, 0x09, 0x0B, 0x5C])
        XCTAssertEqual(read[1], [0x41, 0x41, 0x04])
        XCTAssertNil(read[2])
    }

    func testValuesAreReadByTheirColumnType() throws {
        XCTAssertEqual(
            try CopyText.value(Array("0aff".utf8), as: .bytes, table: "t", column: "c"), .bytes(Data([0x0A, 0xFF])))
        XCTAssertEqual(
            try CopyText.value(Array("[\"a\",\"b\\\"c\"]".utf8), as: .textList, table: "t", column: "c"),
            .textList(["a", "b\"c"]))
        XCTAssertEqual(try CopyText.value(Array("t".utf8), as: .boolean, table: "t", column: "c"), .boolean(true))
        XCTAssertEqual(try CopyText.value(nil, as: .integer, table: "t", column: "c"), .null)
        XCTAssertThrowsError(try CopyText.value(Array("12x".utf8), as: .integer, table: "t", column: "c"))
        XCTAssertThrowsError(try CopyText.value(Array("abc".utf8), as: .bytes, table: "t", column: "c"))
        XCTAssertThrowsError(try CopyText.value(Array("[1]".utf8), as: .textList, table: "t", column: "c"))
        XCTAssertThrowsError(try CopyText.value(Array("true".utf8), as: .boolean, table: "t", column: "c"))
    }
}
