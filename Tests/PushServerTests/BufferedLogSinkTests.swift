import Foundation
import Logging
import TestSupport
import XCTest

/// The access log's sink: lines written from a thread of its own, nothing lost on flush, bounded when stuck.
final class BufferedLogSinkTests: XCTestCase {
    private func record(_ i: Int) -> LogRecord {
        LogRecord(
            level: .info, label: "http", message: "Request completed", metadata: [("n", String(i))],
            date: Date(timeIntervalSince1970: 1_700_000_000))
    }

    func testFlushReturnsOnlyAfterEveryEarlierLineIsWrittenInOrder() throws {
        let (r, w) = try makePipe()
        defer { close(r); close(w) }
        let sink = BufferedLogSink(environment: [:], fd: w)
        for i in 0..<500 { sink.write(record(i)) }
        sink.flush()
        let lines = readPipe(r, waiting: false).split(separator: "\n")
        XCTAssertEqual(lines.count, 500)
        XCTAssertEqual(lines.first, "ts=2023-11-14T22:13:20.000Z level=info label=http msg=\"Request completed\" n=0")
        XCTAssertEqual(lines.map { $0.split(separator: "=").last.map(String.init) }, (0..<500).map { String($0) })
        sink.closeNow()
    }

    func testJournalLinesCarryThePriorityPrefixAndNoTimestamp() throws {
        let (r, w) = try makePipe()
        defer { close(r); close(w) }
        let sink = BufferedLogSink(environment: ["JOURNAL_STREAM": "8:1234"], fd: w)
        sink.write(record(1))
        sink.closeNow()
        XCTAssertEqual(readPipe(r, waiting: false), "<6>level=info label=http msg=\"Request completed\" n=1\n")
    }

    func testDropsAndCountsRecordsPastCapacityWhileTheOutputIsBlocked() throws {
        let (r, w) = try makePipe()
        defer { close(r) }
        // A pipe nobody reads yet (64 KiB, less than 5,000 lines): the writer thread soon blocks in write(2), as
        // on a stalled journal.
        let sink = BufferedLogSink(environment: [:], fd: w, capacity: 100, maxBatch: 1)
        // These calls return although the writer is stuck (else the test would hang here): excess is dropped.
        for i in 0..<5_000 { sink.write(record(i)) }
        let output = readPipeInBackground(r)
        sink.closeNow()
        close(w)  // EOF for the reader once everything is read
        let lines = output().split(separator: "\n")
        // The writer reports drops whenever it catches up, so there may be several reports.
        let reports = lines.filter { $0.contains("msg=\"Log lines dropped\"") }
        let dropped = try reports.reduce(0) { sum, line in
            sum + (try XCTUnwrap(Int(line.split(separator: "count=").last ?? "")))
        }
        let written = lines.count - reports.count
        XCTAssertGreaterThan(dropped, 0)
        XCTAssertEqual(written + dropped, 5_000, "every record is either written or counted as dropped")
    }
}
