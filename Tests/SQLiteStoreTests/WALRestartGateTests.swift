import Clocks
import Foundation
import Locking
import TestSupport
import XCTest

@testable import SQLiteStore

/// The gate the writer closes to start the WAL over: it waits for what is in flight only until its deadline, and a
/// read that arrives while it is closed runs once it opens.
final class WALRestartGateTests: XCTestCase {
    /// Starts a writer thread that closes `gate` with 30 s deadlines; what it got lands in the returned box.
    private static func writerHolding(_ gate: WALRestartGate) -> Locked<WALRestartGate.Hold?> {
        let held = Locked<WALRestartGate.Hold?>(nil)
        Thread {
            let outcome = gate.holdReadersAndCheckpoints(
                until: .now + .seconds(30), readersAtMostUntil: .now + .seconds(30))
            held.withLock { $0 = outcome }
        }.start()
        return held
    }

    func testTheWriterHoldsOnceTheReadInFlightEndedAndANewReadWaitsUntilItReopens() async throws {
        let gate = WALRestartGate()
        gate.enterRead()
        let held = Self.writerHolding(gate)
        usleep(20_000)
        XCTAssertNil(held.withLock { $0 }, "the writer did not wait for the read in flight")
        gate.leaveRead()
        try await eventually("the writer held the gate") { held.withLock { $0 } == .held }
        let read = Locked(false)
        let reader = Thread {
            gate.enterRead()
            read.withLock { $0 = true }
            gate.leaveRead()
        }
        reader.start()
        usleep(20_000)
        XCTAssertFalse(read.withLock { $0 }, "a read began while the gate was closed")
        gate.reopen()
        try await eventually("the waiting read ran") { read.withLock { $0 } }
    }

    func testReadsInFlightPastTheWritersWaitKeepTheGateClosedOnlyUntilTheReadersDeadline() async throws {
        let gate = WALRestartGate()
        gate.enterRead()
        let closedAt = MonotonicInstant.now
        XCTAssertEqual(
            gate.holdReadersAndCheckpoints(
                until: .now + .milliseconds(20), readersAtMostUntil: .now + .milliseconds(300)),
            .readsInFlight)
        let waited = Locked<Duration?>(nil)
        let reader = Thread {
            gate.enterRead()
            waited.withLock { $0 = closedAt.duration(to: .now) }
            gate.leaveRead()
        }
        reader.start()
        usleep(20_000)
        // The writer's next try, after its next transaction: the gate is still closed and the read still in flight.
        XCTAssertEqual(
            gate.holdReadersAndCheckpoints(until: .now + .milliseconds(20), readersAtMostUntil: .now + .seconds(30)),
            .readsInFlight)
        // Once the readers' time passed the waiting read goes on by itself (whatever the writer does), and the
        // writer's next try gives up.
        try await eventually("the waiting read began") { waited.withLock { $0 } != nil }
        XCTAssertGreaterThanOrEqual(waited.withLock { $0 } ?? .zero, .milliseconds(300))
        XCTAssertEqual(
            gate.holdReadersAndCheckpoints(until: .now + .milliseconds(20), readersAtMostUntil: .now + .seconds(30)),
            .readsOutlasted)
        gate.leaveRead()
    }

    func testTheWriterWaitsForACheckpointInFlightOnlyUntilItsDeadlineAndNoneBeginsWhileARestartIsNear() async throws {
        let gate = WALRestartGate()
        XCTAssertTrue(gate.beginBackgroundCheckpoint())
        let started = MonotonicInstant.now
        XCTAssertEqual(
            gate.holdReadersAndCheckpoints(until: .now + .milliseconds(30), readersAtMostUntil: .now + .seconds(30)),
            .checkpointRunning)
        XCTAssertGreaterThanOrEqual(started.duration(to: .now), .milliseconds(30))
        // The checkpoint ends while the writer waits: the writer holds.
        let held = Self.writerHolding(gate)
        usleep(20_000)
        XCTAssertNil(held.withLock { $0 }, "the writer did not wait for the checkpoint in flight")
        gate.endBackgroundCheckpoint()
        try await eventually("the writer held the gate") { held.withLock { $0 } == .held }
        gate.reopen()
        // Until the writer's commits say the restart is done, the checkpoint thread starts none.
        XCTAssertFalse(gate.beginBackgroundCheckpoint())
        gate.restartPending(false)
        XCTAssertTrue(gate.beginBackgroundCheckpoint())
        gate.endBackgroundCheckpoint()
        gate.restartPending(true)
        XCTAssertFalse(gate.beginBackgroundCheckpoint())
    }
}
