import XCTest

@testable import PublishEngine

/// Every ending of a publish run, driven without a store, a sender or a socket: the runner's steps and the events
/// that arrive meanwhile go in, the runner's next step comes out.
final class PublishRunStateMachineTests: XCTestCase {
    typealias Machine = PublishRunStateMachine

    /// A machine that started delivering (`roundBased`: a local-time publish).
    private func delivering(roundBased: Bool = false) -> Machine {
        var machine = Machine()
        XCTAssertEqual(machine.started(cancelRequested: false, windowClosed: false, roundBased: roundBased), .deliver)
        XCTAssertEqual(machine.phase, .delivering)
        XCTAssertFalse(machine.isDelivered)
        return machine
    }

    // MARK: Before delivery

    func testAStoredCancelEndsCancelledBeforeAnythingIsSent() {
        var machine = Machine()
        XCTAssertEqual(machine.started(cancelRequested: true, windowClosed: false), .finish(.cancelled, .cancelled))
        XCTAssertTrue(machine.isDelivered, "the run's loops never wait on a run that ended before delivering")
    }

    func testACancelThatArrivedBeforeTheStartEndsCancelled() {
        var machine = Machine()
        machine.cancelled()
        XCTAssertEqual(
            machine.started(cancelRequested: false, windowClosed: true), .finish(.cancelled, .cancelled),
            "cancelled wins over a closed window")
    }

    func testAWindowThatClosedBeforeTheStartEndsExpiredWithoutSending() {
        var machine = Machine()
        XCTAssertEqual(
            machine.started(cancelRequested: false, windowClosed: true),
            .finish(.expired, .windowClosedBeforeStart))
    }

    // MARK: Delivery ends

    func testACompleteDeliveryWritesTheLastCheckpointThenFinishes() {
        var machine = delivering()
        XCTAssertEqual(machine.fed(complete: true), .checkpoint)
        XCTAssertTrue(machine.isDelivered, "the checkpoint, lease and fence loops end")
        XCTAssertEqual(machine.checkpointed(.done), .finish(.finished, .notes))
        XCTAssertEqual(machine.phase, .ending)
    }

    func testAFailedLastCheckpointOtherThanAnOutageStillFinishes() {
        var machine = delivering()
        _ = machine.fed(complete: true)
        XCTAssertEqual(machine.checkpointed(.failed), .finish(.finished, .notes))
    }

    func testTheLastCheckpointIsRetriedWhileTheStoreCannotWrite() {
        var machine = delivering()
        _ = machine.fed(complete: true)
        XCTAssertEqual(machine.checkpointed(.storeUnavailable), .checkpointAfterPause)
        XCTAssertEqual(machine.checkpointed(.storeUnavailable), .checkpointAfterPause)
        XCTAssertEqual(machine.checkpointed(.done), .finish(.finished, .notes))
    }

    func testAnEngineStopDuringAnOutageHandsTheJobBackInsteadOfFinishing() {
        var machine = delivering()
        _ = machine.fed(complete: true)
        XCTAssertEqual(machine.checkpointed(.storeUnavailable), .checkpointAfterPause)
        machine.engineStopped()
        XCTAssertEqual(
            machine.checkpointed(.storeUnavailable), .handBack(.paused),
            "finishing would drop the unwritten results from the counts")
    }

    func testAnIncompleteDeliveryStoppedByTheEngineIsHandedBack() {
        var machine = delivering()
        machine.engineStopped()
        XCTAssertTrue(machine.mustStop)
        XCTAssertEqual(machine.fed(complete: false), .checkpoint)
        XCTAssertEqual(machine.checkpointed(.done), .handBack(.paused))
    }

    func testAnEngineStopAfterEveryTargetWasHandedOutStillFinishes() {
        var machine = delivering()
        _ = machine.fed(complete: true)
        machine.engineStopped()
        XCTAssertEqual(machine.checkpointed(.done), .finish(.finished, .notes))
    }

    func testARunThatNeverGotASlotBeforeTheStopIsHandedBack() {
        var machine = delivering()
        XCTAssertFalse(machine.holdsSlot)
        machine.engineStopped()
        _ = machine.fed(complete: false)
        XCTAssertEqual(machine.checkpointed(.done), .handBack(.paused))
    }

    // MARK: Lease

    func testALostLeaseEndsQuietlyWhateverElseHappened() {
        for outcome in [Machine.CheckpointOutcome.done, .storeUnavailable, .failed] {
            var machine = delivering()
            machine.cancelled()
            machine.expired()
            machine.leaseLost()
            XCTAssertTrue(machine.mustStop)
            _ = machine.fed(complete: false)
            XCTAssertEqual(machine.checkpointed(outcome), .endQuietly, "\(outcome)")
        }
    }

    func testAFencedRunReleasesItsLeaseOnlyWhenItsLastCheckpointWasWritten() {
        var written = delivering()
        XCTAssertTrue(written.fenced())
        XCTAssertFalse(written.fenced(), "fenced once")
        _ = written.fed(complete: false)
        XCTAssertEqual(written.checkpointed(.done), .handBack(.fenced(releaseLease: true)))

        var refused = delivering()
        _ = refused.fenced()
        _ = refused.fed(complete: false)
        XCTAssertEqual(
            refused.checkpointed(.failed), .handBack(.fenced(releaseLease: false)),
            "another node may hold the lease: it runs out instead")
    }

    func testAFencedRunKeepsRetryingItsLastCheckpointThroughAnOutage() {
        var machine = delivering()
        _ = machine.fenced()
        _ = machine.fed(complete: false)
        XCTAssertEqual(machine.checkpointed(.storeUnavailable), .checkpointAfterPause)
        machine.engineStopped()
        XCTAssertEqual(machine.checkpointed(.storeUnavailable), .handBack(.fenced(releaseLease: false)))
    }

    func testAFencedRunIsHandedBackEvenWhenCancelled() {
        var machine = delivering()
        machine.cancelled()
        _ = machine.fenced()
        _ = machine.fed(complete: false)
        XCTAssertEqual(machine.checkpointed(.done), .handBack(.fenced(releaseLease: true)))
    }

    // MARK: Cancel and expiry while sending

    func testACancelWhileSendingEndsCancelledOnceTheLastResultsAreWritten() {
        var machine = delivering()
        machine.cancelled()
        XCTAssertTrue(machine.mustStop)
        _ = machine.fed(complete: false)
        XCTAssertEqual(machine.checkpointed(.storeUnavailable), .checkpointAfterPause)
        XCTAssertEqual(machine.checkpointed(.done), .finish(.cancelled, .cancelled))
    }

    func testACancelWinsOverAnExpiry() {
        var machine = delivering()
        machine.expired()
        machine.cancelled()
        _ = machine.fed(complete: false)
        XCTAssertEqual(machine.checkpointed(.done), .finish(.cancelled, .cancelled))
    }

    func testAWindowClosingWhileSendingEndsExpired() {
        var machine = delivering()
        machine.expired()
        _ = machine.fed(complete: false)
        XCTAssertEqual(machine.checkpointed(.done), .finish(.expired, .windowClosedWhileSending))
    }

    func testARetryThatOutlivedTheWindowEndsACompletePublishExpired() {
        var machine = delivering()
        machine.retryOutlivedTheWindow()
        XCTAssertFalse(machine.mustStop, "the rest is still sent while the window is open")
        _ = machine.fed(complete: true)
        XCTAssertEqual(machine.checkpointed(.done), .finish(.expired, .windowClosedBeforeRetries))
    }

    func testARetryThatOutlivedTheWindowDoesNotFinishARunStoppedOnTheWay() {
        var machine = delivering()
        machine.retryOutlivedTheWindow()
        machine.engineStopped()
        _ = machine.fed(complete: false)
        XCTAssertEqual(machine.checkpointed(.done), .handBack(.paused))
    }

    // MARK: Local-time rounds

    func testACompleteLocalTimeRoundIsRescheduledWhileARoundIsDue() {
        var machine = delivering(roundBased: true)
        _ = machine.fed(complete: true)
        XCTAssertEqual(machine.checkpointed(.done), .reschedule)
        XCTAssertEqual(machine.nextRound(known: true), .reschedule)
    }

    func testALocalTimePublishFinishesAfterItsLastRound() {
        var machine = delivering(roundBased: true)
        _ = machine.fed(complete: true)
        XCTAssertEqual(machine.checkpointed(.done), .reschedule)
        XCTAssertEqual(machine.nextRound(known: false), .finish(.finished, .notes))
    }

    func testAnIncompleteLocalTimeRoundIsHandedBackNotRescheduled() {
        var machine = delivering(roundBased: true)
        machine.engineStopped()
        _ = machine.fed(complete: false)
        XCTAssertEqual(machine.checkpointed(.done), .handBack(.paused))
    }

    // MARK: Slots and the end of the run

    func testSlotsGrantAndTakeBackWithoutStoppingTheRun() {
        var machine = delivering()
        machine.paced(holdsSlot: true)
        XCTAssertTrue(machine.holdsSlot)
        machine.paced(holdsSlot: false)
        XCTAssertFalse(machine.holdsSlot)
        XCTAssertFalse(machine.mustStop, "a parked run waits for its slot again")
    }

    func testTheRunEndsAfterItsRunnerReturns() {
        var machine = delivering()
        machine.submissionStopped()
        XCTAssertTrue(machine.submissionEnded)
        _ = machine.fed(complete: true)
        _ = machine.checkpointed(.done)
        XCTAssertFalse(machine.isEnded)
        machine.runEnded()
        XCTAssertTrue(machine.isEnded)
    }

    func testEveryStopReasonStopsSending() {
        let events: [(String, (inout Machine) -> Void)] = [
            ("engine", { $0.engineStopped() }), ("lease", { $0.leaseLost() }), ("fence", { _ = $0.fenced() }),
            ("cancel", { $0.cancelled() }), ("expiry", { $0.expired() }),
        ]
        for (name, event) in events {
            var machine = delivering()
            event(&machine)
            XCTAssertTrue(machine.mustStop, name)
        }
    }
}
