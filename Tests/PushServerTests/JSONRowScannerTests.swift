import PushServer
import XCTest

/// The streaming row splitter for JSON exports: NDJSON, a top-level array, a container object's array member,
/// strings holding brackets, line numbers, chunk boundaries, and files that are not JSON rows.
final class JSONRowScannerTests: XCTestCase {
    private func rows(_ text: String, chunkSize: Int = 1 << 16, maxRowBytes: Int = 1 << 20) throws -> [(
        line: Int, text: String, tooLong: Bool
    )] {
        var scanner = JSONRowScanner(maxRowBytes: maxRowBytes, nextChunk: chunks(of: text, size: chunkSize))
        var all: [(Int, String, Bool)] = []
        while let (line, row, tooLong) = try scanner.next() {
            all.append((line, String(decoding: row, as: UTF8.self), tooLong))
        }
        return all
    }

    func testNDJSONRowsAreTheTopLevelObjects() throws {
        let all = try rows("{\"a\":[1,2]}\n{\"b\":{\"c\":\"}\"}}\n\n{\"d\":\"\\\"{\"}\n")
        XCTAssertEqual(all.map(\.text), ["{\"a\":[1,2]}", "{\"b\":{\"c\":\"}\"}}", "{\"d\":\"\\\"{\"}"])
        XCTAssertEqual(all.map(\.line), [1, 2, 4])
    }

    func testATopLevelArrayGivesItsElements() throws {
        for chunkSize in [1, 5, 1 << 16] {
            let all = try rows("[\n {\"a\":1},\n {\"b\":[{\"nested\":true}]}\n]\n", chunkSize: chunkSize)
            XCTAssertEqual(all.map(\.text), ["{\"a\":1}", "{\"b\":[{\"nested\":true}]}"])
            XCTAssertEqual(all.map(\.line), [2, 3])
        }
    }

    func testAContainerObjectsArrayOfObjectsGivesItsElements() throws {
        let text =
            "{\"results\": [\n{\"objectId\":\"a\",\"channels\":[\"x\"]},\n{\"objectId\":\"b\"}\n], \"count\": 2}\n"
        XCTAssertEqual(
            try rows(text).map(\.text), ["{\"objectId\":\"a\",\"channels\":[\"x\"]}", "{\"objectId\":\"b\"}"])
        XCTAssertEqual(try rows(text, chunkSize: 3).map(\.line), [2, 3])
    }

    func testATopLevelObjectWhoseArraysHoldNoObjectsIsARow() throws {
        XCTAssertEqual(
            try rows("{\"channels\":[\"a\",\"b\"],\"ACL\":{\"*\":{}}}").map(\.text),
            ["{\"channels\":[\"a\",\"b\"],\"ACL\":{\"*\":{}}}"])
    }

    func testARowLongerThanTheLimitIsMarkedAndTheNextRead() throws {
        let all = try rows("[{\"a\":\"\(String(repeating: "x", count: 100))\"},{\"b\":1}]", maxRowBytes: 20)
        XCTAssertEqual(all.map(\.tooLong), [true, false])
        XCTAssertEqual(all[1].text, "{\"b\":1}")
    }

    func testTextThatIsNotJSONRowsStopsTheFile() {
        XCTAssertThrowsError(try rows("id,token\n1,2\n")) { error in
            XCTAssertTrue("\(error)".contains("outside any JSON value"), "\(error)")
        }
        XCTAssertThrowsError(try rows("[{\"a\":1}")) { error in
            XCTAssertTrue("\(error)".contains("ends inside a value"), "\(error)")
        }
        XCTAssertThrowsError(try rows("{\"a\":1}]"))
    }
}
