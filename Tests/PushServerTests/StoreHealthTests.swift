import Foundation
import HTTPServer
import JSON
import Locking
import Logging
import Observability
import PushServer
import PushStore
import XCTest

/// `StoreHealth` turns store health events into log lines, metrics and 503 answers.
final class StoreHealthTests: XCTestCase {
    private let full = StoreUnavailableError(.diskFull, detail: "database or disk is full")

    func testLogsOncePerIntervalCountsFailuresByReasonAndFlipsTheGauge() {
        let sink = CapturingLogSink()
        let metrics = Metrics()
        let clock = Locked(Date(timeIntervalSince1970: 1_700_000_000))
        let health = StoreHealth(
            logInterval: 60, retryAfterSeconds: 30, metrics: metrics,
            logger: Logger(label: "store", level: .info, sink: sink), now: { clock.withLock { $0 } })
        XCTAssertTrue(metrics.render().contains("\npush_store_writable 1\n"))
        for _ in 0..<50 {
            health.record(.failed(full))
            clock.withLock { $0 = $0.addingTimeInterval(1) }
        }
        health.record(.failed(StoreUnavailableError(.ioError, detail: "disk I/O error")))
        XCTAssertTrue(metrics.render().contains("\npush_store_writable 0\n"))
        XCTAssertEqual(metrics.value(.storeUnavailable, ["reason": "disk_full"]), 50)
        XCTAssertEqual(metrics.value(.storeUnavailable, ["reason": "io_error"]), 1)
        XCTAssertFalse(health.snapshot.writable)
        XCTAssertEqual(health.snapshot.failures, 51)
        XCTAssertEqual(health.snapshot.lastFailure?.reason, .ioError)
        XCTAssertEqual(sink.lines.count, 1, "\(sink.lines)")
        XCTAssertTrue(
            sink.lines[0].contains("Store cannot write") && sink.lines[0].contains("reason=disk_full"), sink.lines[0])

        clock.withLock { $0 = $0.addingTimeInterval(10) }
        health.record(.failed(full))
        XCTAssertEqual(sink.lines.count, 2)
        XCTAssertTrue(
            sink.lines[1].contains("Store still cannot write") && sink.lines[1].contains("failures=52"), sink.lines[1])

        health.record(.wrote)
        health.record(.wrote)
        XCTAssertTrue(metrics.render().contains("\npush_store_writable 1\n"))
        XCTAssertTrue(health.snapshot.writable)
        XCTAssertEqual(sink.lines.count, 3)
        XCTAssertTrue(
            sink.lines[2].contains("Store writes again") && sink.lines[2].contains("outage_seconds=60"), sink.lines[2])
        XCTAssertTrue(metrics.render().contains(#"push_store_unavailable_total{reason="disk_full"} 51"#))
    }

    func testRefusedRequestsGet503WithRetryAfterInBeamsFormatWithoutTheReason() throws {
        let health = StoreHealth(logInterval: 60, retryAfterSeconds: 17, metrics: Metrics(), logger: .disabled)
        let response = health.response(for: full)
        XCTAssertEqual(response.status, .serviceUnavailable)
        XCTAssertEqual(response.headers.first("retry-after"), "17")
        let body = try XCTUnwrap(JSONValue.parse(response.body)?.objectValue)
        XCTAssertEqual(body["error"]?.stringValue, "Service Unavailable")
        XCTAssertEqual(
            body["description"]?.stringValue, "The server cannot store data right now; nothing was stored. Retry later")
        XCTAssertFalse(String(decoding: response.body, as: UTF8.self).contains("disk"), "the cause stays in the log")
    }
}
