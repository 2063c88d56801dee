import JSON
import XCTest

final class JSONValueTests: XCTestCase {
    private func parse(_ text: String) throws -> JSONValue {
        try JSONValue(parsing: Array(text.utf8))
    }

    func testParsesNestedDocument() throws {
        let value = try parse(#" { "a" : [1, -2.5, true, false, null, "x"], "b": {"c": {}} , "d": [] } "#)
        XCTAssertEqual(value, ["a": [1, -2.5, true, false, nil, "x"], "b": ["c": .object([:])], "d": .array([])])
    }

    func testKeepsIntegerAndFloatLiteralsApart() throws {
        XCTAssertEqual(try parse("1700000000"), .int(1_700_000_000))
        XCTAssertEqual(try parse("1.7e9"), .double(1.7e9))
        XCTAssertEqual(try parse("1700000000.0"), .double(1.7e9))
        XCTAssertEqual(try parse("-0"), .int(0))
        // Too big for Int: kept as a Double rather than rejected (it is valid JSON).
        XCTAssertEqual(try parse("99999999999999999999"), .double(1e20))
    }

    func testRejectsDuplicateKeys() {
        XCTAssertThrowsError(try parse(#"{"sub":"a","sub":"b"}"#)) {
            XCTAssertEqual($0 as? JSONParseError, JSONParseError(offset: 11, reason: #"duplicate key "sub""#))
        }
    }

    func testRejectsTrailingData() {
        XCTAssertThrowsError(try parse(#"{"a":1} x"#)) {
            XCTAssertEqual(($0 as? JSONParseError)?.reason, "data after the JSON value")
        }
        XCTAssertThrowsError(try parse("01"))
    }

    func testRejectsInvalidNumbers() {
        for text in ["-", "1.", ".5", "1e", "+1", "1e999", "NaN", "Infinity", "0x10"] {
            XCTAssertThrowsError(try parse(text), "accepted \(text)")
        }
    }

    func testDecodesEscapesAndSurrogatePairs() throws {
        XCTAssertEqual(try parse(#""a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00""#), .string("a\"\\/\u{8}\u{c}\n\r\té😀"))
    }

    func testRejectsLoneSurrogatesAndBadEscapes() {
        for text in [#""\ud83d""#, #""\ude00""#, #""\ud83dx""#, #""\x""#, #""\u12g4""#] {
            XCTAssertThrowsError(try parse(text), "accepted \(text)")
        }
    }

    func testRejectsRawControlCharactersInStrings() {
        XCTAssertThrowsError(try parse("\"a\nb\""))
    }

    func testRejectsInvalidUTF8() {
        XCTAssertThrowsError(try JSONValue(parsing: [0x22, 0xC3, 0x28, 0x22]))
        // An overlong encoding of "/".
        XCTAssertThrowsError(try JSONValue(parsing: [0x22, 0xC0, 0xAF, 0x22]))
    }

    func testRejectsNestingBeyondLimit() {
        XCTAssertNoThrow(try parse(String(repeating: "[", count: 32) + String(repeating: "]", count: 32)))
        XCTAssertThrowsError(try parse(String(repeating: "[", count: 33) + String(repeating: "]", count: 33)))
        XCTAssertThrowsError(try parse(String(repeating: "[", count: 100_000)))
    }

    func testRejectsEmptyAndTruncatedInput() {
        for text in ["", "   ", "{", #"{"a""#, #"{"a":"#, "[1,", "tru", "nul", #"{"a":1,}"#, "[1,]", "{1:2}"] {
            XCTAssertThrowsError(try parse(text), "accepted \(text)")
        }
    }

    func testEncodesCompactlyWithSortedKeysAndEscapes() throws {
        let value: JSONValue = ["sub": "a\"b\\c\n\u{1}", "exp": 1_700_000_000, "flag": true, "list": [1.5, nil]]
        XCTAssertEqual(value.jsonText, #"{"exp":1700000000,"flag":true,"list":[1.5,null],"sub":"a\"b\\c\n\u0001"}"#)
        XCTAssertEqual(try JSONValue(parsing: value.serialized()), value)
    }

    func testIntValueAcceptsOnlyIntegralNumbers() {
        XCTAssertEqual(JSONValue.int(5).intValue, 5)
        XCTAssertEqual(JSONValue.double(1.7e9).intValue, 1_700_000_000)
        XCTAssertNil(JSONValue.double(1.5).intValue)
        XCTAssertNil(JSONValue.double(1e300).intValue)
        XCTAssertNil(JSONValue.string("5").intValue)
        XCTAssertNil(JSONValue.bool(true).intValue)
    }

    // MARK: Numbers from hostile clients

    func testNumbersAtAndPastTheIntegerRangeParse() throws {
        XCTAssertEqual(try parse("9223372036854775807"), .int(.max))
        XCTAssertEqual(try parse("-9223372036854775808"), .int(.min))
        XCTAssertEqual(try parse("9223372036854775808"), .double(9_223_372_036_854_775_808))
        XCTAssertEqual(try parse("-9223372036854775809"), .double(-9_223_372_036_854_775_808))
        XCTAssertEqual(try parse("9999999999999999"), .int(9_999_999_999_999_999))
        XCTAssertEqual(try parse("1e308"), .double(1e308))
        XCTAssertEqual(try parse("-1e308"), .double(-1e308))
        XCTAssertEqual(try parse("1e-400"), .double(0))
        XCTAssertEqual(try parse("-0.0"), .double(-0.0))
        XCTAssertThrowsError(try parse("1" + String(repeating: "0", count: 400)), "past Double: not a finite number")
        XCTAssertThrowsError(try parse("-1e309"))
    }

    func testIntValueIsNilForEveryNumberOutsideInt() {
        XCTAssertNil(JSONValue.double(9_223_372_036_854_775_808).intValue)  // 2^63
        XCTAssertEqual(JSONValue.double(-9_223_372_036_854_775_808).intValue, .min)  // -2^63 fits
        XCTAssertNil(JSONValue.double(1e308).intValue)
        XCTAssertNil(JSONValue.double(-1e308).intValue)
        XCTAssertNil(JSONValue.double(.infinity).intValue)
        XCTAssertNil(JSONValue.double(.nan).intValue)
        XCTAssertEqual(JSONValue.double(-0.0).intValue, 0)
        XCTAssertEqual(JSONValue.int(.min).intValue, .min)
    }
}
