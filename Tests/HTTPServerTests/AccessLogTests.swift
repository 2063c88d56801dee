import Foundation
import Locking
import Logging
import TestSupport
import XCTest

@testable import HTTPServer

/// The cheap access log: byte-identical lines from the fast encoder, batches through the buffered sink, and no
/// line lost when the server and the sink stop cleanly.
final class AccessLogTests: XCTestCase {
    private let hostile = [
        "plain", "", "a b", "k=v", "x\nlevel=error", "quote\"d", "back\\slash", "tab\there",
        "\u{7F}del", "\u{1}ctl", "ünïcødé", "emoji 🎉", "/items/:id", "127.0.0.1:5000", "0.042",
    ]

    func testEncoderWritesExactlyWhatLogFormatWrites() {
        for journal in [false, true] {
            var encoder = LogLineEncoder(journal: journal)
            for (i, value) in hostile.enumerated() {
                let date = Date(timeIntervalSince1970: 1_700_000_000 + Double(i) * 0.377)
                let record = LogRecord(
                    level: LogLevel.allCases[i % LogLevel.allCases.count], label: value,
                    message: "Request completed", metadata: [("k", value), ("n", String(i))],
                    date: date)
                var bytes: [UInt8] = []
                encoder.append(record, to: &bytes)
                XCTAssertEqual(String(decoding: bytes, as: UTF8.self), LogFormat.line(record, journal: journal))
            }
        }
    }

    func testLineRenderedOnTheLoopIsExactlyTheRecordsLine() throws {
        let logger = Logger(label: "http", level: .info, sink: NullLogSink()).with(["node": "a b", "k": "v"])
        let statuses = [200, 404, 0, -1, 599, Int.max, Int.min]
        let micros: [Int64] = [0, 1, 42, 999, 1000, 1500, 12_345, 9_999_999]
        for journal in [false, true] {
            var encoder = LogLineEncoder(journal: journal)
            for (i, value) in hostile.enumerated() {
                let record = AccessLogRecord(
                    method: value, route: value, status: statuses[i % statuses.count], bytesIn: i * 977,
                    bytesOut: Int.max - i, duration: .microseconds(micros[i % micros.count]), requestID: value,
                    peer: value, isTLS: false)
                let date = Date(timeIntervalSince1970: 1_700_000_000 + Double(i) * 0.377)
                var bytes: [UInt8] = []
                AccessLog.render(
                    record, date: date, head: AccessLog.head(label: logger.label, metadata: logger.metadata),
                    encoder: &encoder, into: &bytes)
                var expected = try XCTUnwrap(logger.record(.info, AccessLog.message, AccessLog.fields(record)))
                expected.date = date
                XCTAssertEqual(String(decoding: bytes, as: UTF8.self), LogFormat.line(expected, journal: journal))
            }
        }
    }

    func testDecimalDigitsAreWhatStringWrites() {
        for value in [0, 1, -1, 9, 10, 99, 100, 12_345, -12_345, Int.max, Int.min, Int.max - 1, Int.min + 1] {
            var bytes: [UInt8] = []
            LogLineEncoder.appendDecimal(value, to: &bytes)
            XCTAssertEqual(String(decoding: bytes, as: UTF8.self), String(value))
        }
    }

    func testEncoderTimestampsBeforeEpochAndOutOfRangeMatchTheSlowFormatter() {
        var encoder = LogLineEncoder(journal: false)
        for seconds in [-0.25, -86_400, 0, 59.999, 60, 1e16, -1e300] {
            let record = LogRecord(
                level: .info, label: "t", message: "m", metadata: [],
                date: Date(timeIntervalSince1970: seconds))
            var bytes: [UInt8] = []
            encoder.append(record, to: &bytes)
            XCTAssertEqual(String(decoding: bytes, as: UTF8.self), LogFormat.line(record, journal: false), "\(seconds)")
        }
    }

    func testMillisAreFormattedLikeADouble() {
        for micros: Int64 in [0, 1, 9, 10, 42, 100, 999, 1000, 1001, 1010, 1500, 12_000, 123_456, 9_999_999] {
            XCTAssertEqual(AccessLog.millis(.microseconds(micros)), String(Double(micros) / 1000), "\(micros) µs")
        }
        XCTAssertEqual(AccessLog.millis(.nanoseconds(1_999)), "0.001", "sub-microsecond digits are dropped")
    }

    func testBatchesKeepTheirOrderAndCountAgainstCapacityPerRecord() throws {
        let (r, w) = try makePipe()
        defer { close(r) }
        let sink = BufferedLogSink(environment: [:], fd: w, capacity: 10)
        let logger = Logger(label: "http", level: .info, sink: sink)
        // The writer thread may take the first batch at once; the second then fits or is dropped whole, and
        // every record is either written or counted.
        let batches = (0..<3).map { b in
            (0..<8).compactMap { logger.record(.info, "Request completed", ["n": "\(b * 8 + $0)"]) }
        }
        for batch in batches { logger.write(batch) }
        sink.closeNow()
        close(w)
        let lines = readPipe(r).split(separator: "\n")
        let written = lines.filter { $0.contains("msg=\"Request completed\"") }
        let values = written.map { Int($0.split(separator: "n=").last ?? "") ?? -1 }
        XCTAssertEqual(values, values.sorted(), "in order")
        XCTAssertEqual(values.count % 8, 0, "a batch is admitted or dropped whole")
        let dropped = lines.filter { $0.contains("Log lines dropped") }
            .reduce(0) { $0 + (Int($1.split(separator: "count=").last ?? "") ?? 0) }
        XCTAssertEqual(values.count + dropped, 24)
    }

    func testEveryAccessLineReachesTheSinkWhenTheServerStopsCleanly() throws {
        let (r, w) = try makePipe()
        defer { close(r) }
        // A pipe holds 64 KiB; read it while the server runs so the writer never blocks.
        let output = readPipeInBackground(r)
        let sink = BufferedLogSink(environment: [:], fd: w)
        var router = Router()
        router.get("/health", onEventLoop: { _ in .json(raw: Array(#"{"status":"ok"}"#.utf8)) })
        router.get("/task") { _ in .text("t") }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, eventLoopCount: 2), router: router,
            logger: Logger(label: "http", level: .info, sink: sink))
        let port = try server.start()
        let clients = try (0..<4).map { _ in try RawHTTPClient(port: port, timeout: 5) }
        for i in 0..<200 {
            let response = try clients[i % 4].request("GET", i % 3 == 0 ? "/task" : "/health")
            XCTAssertEqual(response.status, 200)
        }
        let stopped = DispatchSemaphore(value: 0)
        Task.detached {
            await server.shutdown()
            stopped.signal()
        }
        stopped.wait()
        sink.closeNow()
        close(w)
        let lines = output().split(separator: "\n").filter { $0.contains("msg=\"Request completed\"") }
        XCTAssertEqual(lines.count, 200)
        XCTAssertTrue(lines.allSatisfy { $0.contains("status=200") && $0.contains("peer=127.0.0.1:") })
    }

    func testObserverGetsEveryRequestExactlyOnceInBatchesByTheTimeTheServerStopped() throws {
        let batches = Locked([[AccessLogRecord]]())
        var router = Router()
        router.get("/health", onEventLoop: { _ in .json(raw: Array(#"{"status":"ok"}"#.utf8)) })
        router.get("/task") { _ in .text("t") }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, eventLoopCount: 2), router: router,
            onRequestsCompleted: { batch in batches.withLock { $0.append(batch) } })
        let port = try server.start()
        var sent: [String] = []
        let clients = try (0..<4).map { _ in try RawHTTPClient(port: port, timeout: 5) }
        for i in 0..<120 {
            let id = "one-\(i)"
            sent.append(id)
            let response = try clients[i % 4].request(
                "GET", i % 3 == 0 ? "/task" : "/health",
                headers: [("X-Request-ID", id)])
            XCTAssertEqual(response.status, 200)
        }
        // Pipelined: ten requests in one write are answered in one loop iteration, so they arrive as one batch.
        let pipelined = (0..<10).map { "piped-\($0)" }
        try clients[0].send(pipelined.map { "GET /health HTTP/1.1\r\nHost: x\r\nX-Request-ID: \($0)\r\n\r\n" }.joined())
        for _ in pipelined { XCTAssertEqual(try clients[0].readResponse().status, 200) }
        sent += pipelined
        let stopped = DispatchSemaphore(value: 0)
        Task.detached {
            await server.shutdown()
            stopped.signal()
        }
        stopped.wait()
        let received = batches.withLock { $0 }
        XCTAssertEqual(received.flatMap { $0 }.map(\.requestID).sorted(), sent.sorted(), "each request exactly once")
        XCTAssertTrue(received.allSatisfy { !$0.isEmpty && $0.count <= AccessLog.batchSize })
        XCTAssertTrue(
            received.contains { batch in batch.filter { $0.requestID.hasPrefix("piped-") }.count == 10 },
            "\(received.map(\.count))")
        let piped = received.flatMap { $0 }.filter { $0.requestID.hasPrefix("piped-") }.map(\.requestID)
        XCTAssertEqual(piped, pipelined, "in order")
    }
}
