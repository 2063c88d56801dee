import Foundation
import Observability
import PushStore
import XCTest

/// The pure outage state machine: what is logged when, with the time passed in.
final class StoreWriteStateTests: XCTestCase {
    private let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    private let full = StoreUnavailableError(.diskFull, detail: "database or disk is full")
    private let io = StoreUnavailableError(.ioError, detail: "disk I/O error")

    private func at(_ seconds: TimeInterval) -> Date { t0.addingTimeInterval(seconds) }

    func testStartsWritableAndSuccessesSayNothing() {
        var state = StoreWriteState(logInterval: 60)
        XCTAssertTrue(state.isWritable)
        XCTAssertNil(state.record(.wrote, at: at(0)))
        XCTAssertTrue(state.isWritable)
        XCTAssertNil(state.lastLog)
    }

    func testLogsTheFirstFailureThenOncePerIntervalWhileFailuresContinue() {
        var state = StoreWriteState(logInterval: 60)
        XCTAssertEqual(state.record(.failed(full), at: at(0)), .failing(full))
        XCTAssertFalse(state.isWritable)
        // A failure per request for a minute logs nothing more…
        for second in stride(from: 0.5, to: 60, by: 0.5) {
            XCTAssertNil(state.record(.failed(full), at: at(second)), "second \(second)")
        }
        // …until the interval has passed, and the line says since when and how often.
        XCTAssertEqual(state.record(.failed(io), at: at(60)), .stillFailing(io, since: at(0), failures: 121))
        XCTAssertNil(state.record(.failed(full), at: at(61)))
        XCTAssertEqual(state.outage?.last, full, "the latest reason is kept")
        XCTAssertEqual(state.outage?.since, at(0))
        XCTAssertEqual(state.outage?.failures, 122)
    }

    func testRecoveryIsLoggedOnceWithTheOutageLength() {
        var state = StoreWriteState(logInterval: 60)
        _ = state.record(.failed(full), at: at(0))
        _ = state.record(.failed(full), at: at(5))
        XCTAssertEqual(state.record(.wrote, at: at(10)), .recovered(since: at(0), failures: 2))
        XCTAssertTrue(state.isWritable)
        XCTAssertNil(state.outage)
        XCTAssertNil(state.record(.wrote, at: at(11)), "the recovery is logged once")
    }

    func testAFlappingStoreLogsAtMostTwoLinesPerInterval() {
        var state = StoreWriteState(logInterval: 60)
        var lines: [StoreWriteState.Report] = []
        // Fails and recovers every second for two minutes (a disk at the edge of full).
        for second in 0..<120 {
            if let report = state.record(.failed(full), at: at(Double(second))) { lines.append(report) }
            if let report = state.record(.wrote, at: at(Double(second) + 0.5)) { lines.append(report) }
        }
        XCTAssertEqual(
            lines,
            [
                .failing(full), .recovered(since: at(0), failures: 1),
                .failing(full), .recovered(since: at(61), failures: 1),
            ])
    }

    func testAnOutageStartedSilentlyIsReportedOnceTheIntervalPassesAndCountsFromItsStart() {
        var state = StoreWriteState(logInterval: 60)
        _ = state.record(.failed(full), at: at(0))
        _ = state.record(.wrote, at: at(1))
        // Fails again 2 s after the recovery line: too soon to log, but the outage is real.
        XCTAssertNil(state.record(.failed(full), at: at(3)))
        XCTAssertFalse(state.isWritable)
        XCTAssertNil(state.record(.failed(full), at: at(30)))
        XCTAssertEqual(state.record(.failed(full), at: at(61)), .failing(full))
        XCTAssertEqual(state.outage?.since, at(3))
        XCTAssertEqual(state.record(.wrote, at: at(70)), .recovered(since: at(3), failures: 3))
    }

    func testAnOutageNeverReportedEndsSilently() {
        var state = StoreWriteState(logInterval: 60)
        _ = state.record(.failed(full), at: at(0))
        _ = state.record(.wrote, at: at(1))
        XCTAssertNil(state.record(.failed(full), at: at(2)))
        XCTAssertNil(state.record(.wrote, at: at(3)), "its start was not logged, so neither is its end")
        XCTAssertTrue(state.isWritable)
    }

    func testAWallClockSetBackStillLogs() {
        var state = StoreWriteState(logInterval: 60)
        _ = state.record(.failed(full), at: at(0))
        XCTAssertEqual(state.record(.failed(full), at: at(-3600)), .stillFailing(full, since: at(0), failures: 2))
    }
}
