import PushServer
import XCTest

/// The strict RFC 4180 reader: quoted fields with commas, doubled quotes and line breaks, CRLF and LF endings,
/// records that break the rules reported with their line and skipped, and chunk boundaries anywhere.
final class CSVReaderTests: XCTestCase {
    /// Every record of `text`, fed in chunks of `chunkSize` bytes.
    private func records(_ text: String, chunkSize: Int = 1 << 16, maxRecordBytes: Int = 1 << 20) throws -> [CSVReader
        .Record]
    {
        var reader = CSVReader(maxRecordBytes: maxRecordBytes, nextChunk: chunks(of: text, size: chunkSize))
        var all: [CSVReader.Record] = []
        while let record = try reader.next() { all.append(record) }
        return all
    }

    /// `record` is a bad one whose reason says `reason`.
    private func assertRefused(
        _ record: CSVReader.Record, saying reason: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        guard case .failure(let problem) = record.fields else {
            return XCTFail("accepted \(record)", file: file, line: line)
        }
        XCTAssertTrue(problem.reason.contains(reason), problem.reason, file: file, line: line)
    }

    private func fields(_ records: [CSVReader.Record]) -> [[String]?] {
        records.map { try? $0.fields.get() }
    }

    func testQuotedFieldsHoldCommasDoubledQuotesAndLineBreaks() throws {
        let text = "a,b,c\r\n\"x, y\",\"say \"\"hi\"\"\",\"two\r\nlines\"\r\nplain,,last\r\n"
        for chunkSize in [1, 2, 3, 7, 1 << 16] {
            let all = try records(text, chunkSize: chunkSize)
            XCTAssertEqual(
                fields(all), [["a", "b", "c"], ["x, y", "say \"hi\"", "two\r\nlines"], ["plain", "", "last"]],
                "chunk size \(chunkSize)")
            XCTAssertEqual(all.map(\.line), [1, 2, 4], "a record's line is where it starts")
        }
    }

    func testLineFeedEndingsAndAMissingLastEndingAreRead() throws {
        XCTAssertEqual(fields(try records("a,b\nc,d")), [["a", "b"], ["c", "d"]])
        XCTAssertEqual(fields(try records("\"\"\n\n")), [[""], [""]], "an empty quoted field and an empty line")
    }

    func testAByteOrderMarkBeforeTheHeaderIsSkipped() throws {
        XCTAssertEqual(fields(try records("\u{FEFF}id,token\r\n1,2\r\n")), [["id", "token"], ["1", "2"]])
    }

    func testAQuoteInsideAnUnquotedFieldMakesThatRecordBadAndTheNextIsRead() throws {
        let all = try records("a,b\r\nx\"y,z\r\nc,d\r\n")
        XCTAssertEqual(all.count, 3)
        XCTAssertEqual(all[1].line, 2)
        assertRefused(all[1], saying: "field 1: a quote inside an unquoted field")
        XCTAssertEqual(try all[2].fields.get(), ["c", "d"])
    }

    func testTextAfterAClosingQuoteMakesTheRecordBad() throws {
        let all = try records("\"a\"b,c\r\nd,e\r\n")
        assertRefused(all[0], saying: "only a comma or a line end may follow a closing quote")
        XCTAssertEqual(try all[1].fields.get(), ["d", "e"])
    }

    func testAQuoteLeftOpenAtTheEndOfTheFileIsReported() throws {
        let all = try records("a,b\r\n\"never closed,\r\nx\r\n")
        XCTAssertEqual(all.count, 2)
        XCTAssertEqual(all[1].line, 2)
        assertRefused(all[1], saying: "not closed before the end of the file")
    }

    func testABareCarriageReturnOutsideQuotesIsRefused() throws {
        let all = try records("a\rb,c\r\n")
        guard case .failure = all[0].fields else { return XCTFail("accepted \(all[0])") }
    }

    func testARecordLongerThanTheLimitIsRefusedAndTheNextRead() throws {
        let all = try records(String(repeating: "x", count: 100) + "\r\nshort\r\n", maxRecordBytes: 50)
        assertRefused(all[0], saying: "longer than 50 bytes")
        XCTAssertEqual(try all[1].fields.get(), ["short"])
    }
}
