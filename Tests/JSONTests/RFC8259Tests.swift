import JSON
import XCTest

/// The grammar of RFC 8259 and the choices it leaves to implementations, as the parser makes them.
final class RFC8259Tests: XCTestCase {
    private func parse(_ text: String) throws -> JSONValue {
        try JSONValue(parsing: Array(text.utf8))
    }

    private func assertRejects(_ bytes: [UInt8], _ message: String, file: StaticString = #filePath, line: UInt = #line)
    {
        XCTAssertThrowsError(try JSONValue(parsing: bytes), message, file: file, line: line)
    }

    // MARK: §2 grammar

    func testAcceptsAnyValueAtTopLevel() throws {
        XCTAssertEqual(try parse("null"), .null)
        XCTAssertEqual(try parse("true"), .bool(true))
        XCTAssertEqual(try parse("\"x\""), .string("x"))
        XCTAssertEqual(try parse("42"), .int(42))
        XCTAssertEqual(try parse("[]"), .array([]))
    }

    func testAcceptsTheFourWhitespaceCharactersOnly() throws {
        XCTAssertEqual(try parse(" \t\r\n[ 1 ,\t2 ]\n"), [1, 2])
        assertRejects(Array("\u{0B}1".utf8), "vertical tab is not JSON whitespace")
        assertRejects(Array("\u{A0}1".utf8), "no-break space is not JSON whitespace")
        assertRejects([0xEF, 0xBB, 0xBF] + Array("{}".utf8), "RFC 8259 §8.1: no byte order mark")
    }

    func testRejectsCommentsSingleQuotesAndBareWords() {
        for text in ["// c\n1", "/* c */ 1", "{'a':1}", "{a:1}", "True", "NULL", "undefined", "[1 2]", "{\"a\" 1}"] {
            XCTAssertThrowsError(try parse(text), "accepted \(text)")
        }
    }

    // MARK: §6 numbers

    func testTrueAndOneStayApartThroughARoundTrip() throws {
        let text = #"{"aps":{"content-available":1,"mutable-content":true},"n":1.0,"z":0,"f":false}"#
        let value = try parse(text)
        XCTAssertEqual(value["aps"]?["content-available"], .int(1))
        XCTAssertEqual(value["aps"]?["mutable-content"], .bool(true))
        XCTAssertEqual(value["n"], .double(1))
        XCTAssertEqual(value["z"], .int(0))
        XCTAssertEqual(value["f"], .bool(false))
        XCTAssertNotEqual(JSONValue.int(1), JSONValue.bool(true))
        XCTAssertNil(JSONValue.int(1).boolValue)
        XCTAssertNil(JSONValue.bool(true).intValue)
        let written = value.jsonText
        XCTAssertEqual(written, #"{"aps":{"content-available":1,"mutable-content":true},"f":false,"n":1.0,"z":0}"#)
        XCTAssertEqual(try parse(written), value)
    }

    func testIntegersPastDoublePrecisionStayExact() throws {
        let twoTo53Plus1 = "9007199254740993"
        XCTAssertEqual(try parse(twoTo53Plus1), .int(9_007_199_254_740_993))
        XCTAssertEqual(try parse(twoTo53Plus1).jsonText, twoTo53Plus1, "a Double would print 9007199254740992")
        XCTAssertEqual(try parse("-9007199254740993").jsonText, "-9007199254740993")
    }

    func testNegativeZero() throws {
        XCTAssertEqual(try parse("-0"), .int(0), "an integer literal: the integer zero")
        let double = try parse("-0.0")
        guard case .double(let value) = double else { return XCTFail("\(double)") }
        XCTAssertEqual(value.sign, .minus)
        XCTAssertEqual(double.jsonText, "-0.0", "the sign survives a round trip")
        XCTAssertEqual(try parse("-0e0").jsonText, "-0.0")
    }

    func testLargestDoublesParseAndOverflowIsAnError() throws {
        XCTAssertEqual(try parse("1e308"), .double(1e308))
        XCTAssertEqual(try parse("1.7976931348623157e308"), .double(.greatestFiniteMagnitude))
        XCTAssertEqual(try parse(try parse("1e308").jsonText), .double(1e308))
        for text in ["1e309", "-1e309", "1.8e308", "1E400"] {
            XCTAssertThrowsError(try parse(text), "\(text) is not a finite double") {
                XCTAssertEqual(($0 as? JSONParseError)?.reason, "number out of range")
            }
        }
    }

    func testExponentAndFractionSpellings() throws {
        XCTAssertEqual(try parse("1E2"), .double(100))
        XCTAssertEqual(try parse("1e+2"), .double(100))
        XCTAssertEqual(try parse("-1.25e-2"), .double(-0.0125))
        XCTAssertEqual(try parse("0.5"), .double(0.5))
        for text in ["-01", "00", "1.e5", "1e+", "--1", "1..0", "0x1", ".1", "1_000"] {
            XCTAssertThrowsError(try parse(text), "accepted \(text)")
        }
    }

    func testDoublesRoundTripThroughTheirText() throws {
        for number in [0.1, 1.0 / 3, 1e-7, 123_456.789, .leastNonzeroMagnitude, 2.5e15, -1e100] {
            XCTAssertEqual(try parse(JSONValue.double(number).jsonText), .double(number), "\(number)")
        }
    }

    // MARK: §7 strings and §8.1 UTF-8

    func testEveryEscape() throws {
        XCTAssertEqual(try parse(#""\"\\\/\b\f\n\r\t""#), .string("\"\\/\u{8}\u{C}\n\r\t"))
        XCTAssertEqual(try parse(#""\u0041\u00e9\u20AC\uFFFF""#), .string("Aé€\u{FFFF}"))
        XCTAssertEqual(try parse(#""\uD834\uDD1E""#), .string("𝄞"), "a surrogate pair is one scalar")
        XCTAssertEqual(try parse(#""\u0000""#), .string("\u{0}"))
    }

    func testRejectsLoneAndMisorderedSurrogateEscapes() {
        for text in [#""\uDD1E\uD834""#, #""\uD834\u0041""#, #""\uD834\\""#, #""\uD834"#, #""\uDFFF""#] {
            XCTAssertThrowsError(try parse(text), "accepted \(text)")
        }
    }

    func testAcceptsRawMultibyteUTF8() throws {
        XCTAssertEqual(try JSONValue(parsing: [0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22]), .string("😀"))
        XCTAssertEqual(try JSONValue(parsing: [0x22, 0xEF, 0xBF, 0xBF, 0x22]), .string("\u{FFFF}"))
    }

    func testRejectsInvalidUTF8InStringsAndOutside() {
        assertRejects([0x22, 0xED, 0xA0, 0x80, 0x22], "an encoded surrogate (CESU-8)")
        assertRejects([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], "above U+10FFFF")
        assertRejects([0x22, 0xF8, 0x88, 0x80, 0x80, 0x80, 0x22], "a five-byte sequence")
        assertRejects([0x22, 0xE0, 0x80, 0xAF, 0x22], "an overlong three-byte encoding")
        assertRejects([0x22, 0xE2, 0x82, 0x22], "a truncated sequence")
        assertRejects([0x22, 0x80, 0x22], "a lone continuation byte")
        assertRejects([0x22, 0xFF, 0x22], "a byte never valid in UTF-8")
        assertRejects([0xC3, 0xA9], "non-ASCII outside a string")
        assertRejects([0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D], "invalid UTF-8 in a key")
    }

    func testRejectsEveryRawControlCharacter() {
        for byte in UInt8(0)..<0x20 {
            assertRejects([0x22, byte, 0x22], "raw 0x\(String(byte, radix: 16)) in a string")
        }
        XCTAssertEqual(try JSONValue(parsing: [0x22, 0x7F, 0x22]), .string("\u{7F}"), "DEL needs no escape")
    }

    // MARK: §4 objects: duplicate keys

    func testDuplicateKeysAreRejectedHoweverSpelled() {
        XCTAssertThrowsError(try parse(#"{"a":1,"\u0061":2}"#), "an escaped spelling of the same key")
        XCTAssertThrowsError(try parse(#"{"x":{"k":1,"k":1}}"#), "a nested duplicate, even with equal values")
        XCTAssertThrowsError(try parse("{\"\u{E9}\":1,\"e\u{301}\":2}"), "canonically equivalent keys")
        XCTAssertEqual(try parse(#"{"a":{"a":1},"b":{"a":2}}"#)["b"]?["a"], .int(2), "the same key in sibling objects")
    }

    // MARK: §9 limits

    func testNestingLimitIsConfigurable() throws {
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        XCTAssertThrowsError(try parse(deep)) {
            XCTAssertEqual(($0 as? JSONParseError)?.reason, "nesting deeper than 32")
        }
        XCTAssertNoThrow(try JSONValue(parsing: Array(deep.utf8), limits: JSONLimits(maxDepth: 40)))
        let objects = String(repeating: #"{"a":"#, count: 33) + "1" + String(repeating: "}", count: 33)
        XCTAssertThrowsError(try parse(objects), "objects count toward the depth too")
    }

    func testInputLongerThanTheLimitIsRejectedBeforeParsing() {
        let text = Array(("[" + String(repeating: "1,", count: 50) + "1]").utf8)
        XCTAssertNoThrow(try JSONValue(parsing: text, limits: JSONLimits(maxBytes: text.count)))
        XCTAssertThrowsError(try JSONValue(parsing: text, limits: JSONLimits(maxBytes: text.count - 1))) {
            XCTAssertEqual(($0 as? JSONParseError)?.reason, "input longer than \(text.count - 1) bytes")
        }
        XCTAssertEqual(JSONLimits().maxBytes, 8 << 20)
        XCTAssertEqual(JSONLimits().maxDepth, 32)
    }

    func testAnArrayLongerThanTheLimitIsRejectedAtItsFirstSurplusElement() throws {
        let limits = JSONLimits(maxArrayCount: 3)
        XCTAssertEqual(
            try JSONValue(parsing: Array(#"{"a":[1,2,3],"b":[[],[],[]]}"#.utf8), limits: limits)["a"],
            [1, 2, 3])
        // The fourth element is never parsed: what follows it, even broken, does not matter.
        XCTAssertThrowsError(try JSONValue(parsing: Array(#"{"a":[1,2,3,tru"#.utf8), limits: limits)) {
            XCTAssertEqual(
                $0 as? JSONParseError,
                JSONParseError(offset: 12, reason: "array longer than 3 elements", kind: .arrayTooLong))
        }
        XCTAssertThrowsError(try JSONValue(parsing: Array("[[1,2,3,4]]".utf8), limits: limits), "nested arrays too") {
            XCTAssertEqual(($0 as? JSONParseError)?.kind, .arrayTooLong)
        }
        XCTAssertEqual(JSONLimits().maxArrayCount, .max)
        XCTAssertThrowsError(try parse("[1,]")) { XCTAssertEqual(($0 as? JSONParseError)?.kind, .syntax) }
    }

    func testErrorsNameTheOffset() {
        XCTAssertThrowsError(try parse(#"{"a":tru}"#)) {
            XCTAssertEqual(($0 as? JSONParseError)?.description, "invalid JSON at byte 5: invalid literal")
        }
    }
}
