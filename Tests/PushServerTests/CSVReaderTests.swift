import PushServer
import XCTest

/// The strict RFC 4180 reader: quoted fields with commas, doubled quotes and line breaks, CRLF and LF endings,
/// records that break the rules reported with their line and skipped, and chunk boundaries anywhere.
final class CSVReaderTests: XCTestCase {
    /// Every record of `text`, fed in chunks of `chunkSize` bytes.
    private func records(_ text: String, chunkSize: Int = 1 << 16, maxRecordBytes: Int = 1 << 20) throws -> [CSVReader
        .Record]
    {
        var bytes = ArraySlice(Array(text.utf8))
        var reader = CSVReader(maxRecordBytes: maxRecordBytes) {
            guard !bytes.isEmpty else { return nil }
            let chunk = Array(bytes.prefix(chunkSize))
            bytes = bytes.dropFirst(chunkSize)
            return chunk
        }
        var all: [CSVReader.Record] = []
        while let record = try reader.next() { all.append(record) }
        return all
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
        guard case .failure(let problem) = all[1].fields else { return XCTFail("accepted \(all[1])") }
        XCTAssertTrue(problem.reason.contains("field 1: a quote inside an unquoted field"), problem.reason)
        XCTAssertEqual(try all[2].fields.get(), ["c", "d"])
    }

    func testTextAfterAClosingQuoteMakesTheRecordBad() throws {
        let all = try records("\"a\"b,c\r\nd,e\r\n")
        guard case .failure(let problem) = all[0].fields else { return XCTFail("accepted \(all[0])") }
        XCTAssertTrue(problem.reason.contains("only a comma or a line end may follow a closing quote"), problem.reason)
        XCTAssertEqual(try all[1].fields.get(), ["d", "e"])
    }

    func testAQuoteLeftOpenAtTheEndOfTheFileIsReported() throws {
        let all = try records("a,b\r\n\"never closed,\r\nx\r\n")
        XCTAssertEqual(all.count, 2)
        XCTAssertEqual(all[1].line, 2)
        guard case .failure(let problem) = all[1].fields else { return XCTFail("accepted \(all[1])") }
        XCTAssertTrue(problem.reason.contains("not closed before the end of the file"), problem.reason)
    }

    func testABareCarriageReturnOutsideQuotesIsRefused() throws {
        let all = try records("a\rb,c\r\n")
        guard case .failure = all[0].fields else { return XCTFail("accepted \(all[0])") }
    }

    func testARecordLongerThanTheLimitIsRefusedAndTheNextRead() throws {
        let all = try records(String(repeating: "x", count: 100) + "\r\nshort\r\n", maxRecordBytes: 50)
        guard case .failure(let problem) = all[0].fields else { return XCTFail("accepted \(all[0])") }
        XCTAssertTrue(problem.reason.contains("longer than 50 bytes"), problem.reason)
        XCTAssertEqual(try all[1].fields.get(), ["short"])
    }
}
