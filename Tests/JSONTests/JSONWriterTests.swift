import JSON
import XCTest

final class JSONWriterTests: XCTestCase {
    func testEscapesOnlyWhatRFC8259Requires() {
        XCTAssertEqual(JSONValue.string("a/b").jsonText, #""a/b""#, "no \\/ (Foundation's encoders write one)")
        XCTAssertEqual(JSONValue.string("é€😀").serialized(), Array("\"é€😀\"".utf8), "non-ASCII as UTF-8")
        XCTAssertEqual(JSONValue.string("\u{7F}\u{2028}").jsonText, "\"\u{7F}\u{2028}\"")
        XCTAssertEqual(JSONValue.string("q\"b\\").jsonText, #""q\"b\\""#)
        XCTAssertEqual(JSONValue.string("\n\r\t").jsonText, #""\n\r\t""#)
        XCTAssertEqual(JSONValue.string("\u{0}\u{8}\u{C}\u{1F}").jsonText, #""\u0000\u0008\u000c\u001f""#)
    }

    func testEveryControlCharacterRoundTrips() throws {
        let text = String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) })
        let written = JSONValue.string(text).serialized()
        XCTAssertFalse(written.dropFirst().dropLast().contains { $0 < 0x20 }, "no raw control byte written")
        XCTAssertEqual(try JSONValue(parsing: written), .string(text))
    }

    func testObjectKeysAreSortedByTheirBytes() {
        let value: JSONValue = ["b": 1, "a": 2, "B": 3, "é": 4, "aa": 5, "": 6]
        XCTAssertEqual(value.jsonText, #"{"":6,"B":3,"a":2,"aa":5,"b":1,"é":4}"#)
    }

    func testEqualValuesWriteEqualBytes() throws {
        let first = try JSONValue(parsing: Array(#"{"z":[1,{"y":null,"x":true}],"a":"s"}"#.utf8))
        let second = try JSONValue(parsing: Array(#"{ "a" : "s", "z" : [ 1, { "x" : true, "y" : null } ] }"#.utf8))
        XCTAssertEqual(first.serialized(), second.serialized())
        XCTAssertEqual(first.jsonText, #"{"a":"s","z":[1,{"x":true,"y":null}]}"#)
    }

    func testOrderedObjectKeepsTheGivenOrder() {
        let bytes = JSONWriter.object([("error", "Bad request"), ("description", "x/y \"q\"")])
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), #"{"error":"Bad request","description":"x/y \"q\""}"#)
    }

    func testNumbers() {
        XCTAssertEqual(JSONValue.int(.min).jsonText, "-9223372036854775808")
        XCTAssertEqual(JSONValue.double(1.5).jsonText, "1.5")
        XCTAssertEqual(JSONValue.double(2).jsonText, "2.0", "a double stays a double")
        XCTAssertEqual(JSONValue.double(1e308).jsonText, "1e+308")
        XCTAssertEqual(JSONValue.double(1e-5).jsonText, "1e-05")
    }

    func testNonFiniteDoublesAreWrittenAsNullNotATrap() {
        XCTAssertEqual(
            JSONValue.array([.double(.nan), .double(.infinity), .double(-.infinity)]).jsonText, "[null,null,null]")
    }

    func testNestedContainersAndLiterals() {
        XCTAssertEqual(
            JSONValue.array([[], [:], nil, true, false, "s", 1, 0.5]).jsonText, #"[[],{},null,true,false,"s",1,0.5]"#)
    }
}
