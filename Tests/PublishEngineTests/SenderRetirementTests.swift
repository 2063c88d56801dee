import ConfigModel
import PublishEngine
import XCTest

/// When a changed or deleted instance's senders close: when the last publish run holding them ends (at once when
/// none does), never while a run uses them, and at shutdown at the latest.
final class SenderRetirementTests: XCTestCase {
    private let id = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"

    // MARK: The rule (pure)

    func testRetiredSendersNoRunHoldsCloseAtOnce() {
        var senders = SenderRetirement()
        XCTAssertTrue(senders.retire())
        XCTAssertTrue(senders.closed)
        XCTAssertFalse(senders.retire(), "closed once")
        XCTAssertFalse(senders.shutDown(), "shutdown does not close them again")
    }

    func testRetiredSendersCloseWhenTheLastRunHoldingThemEndsAndNotBefore() {
        var senders = SenderRetirement()
        XCTAssertTrue(senders.hold())
        XCTAssertTrue(senders.hold())
        XCTAssertFalse(senders.retire(), "two runs still use them")
        XCTAssertFalse(senders.release(), "one run still uses them")
        XCTAssertFalse(senders.closed)
        XCTAssertTrue(senders.release(), "the last run ended")
        XCTAssertTrue(senders.closed)
    }

    func testARunCannotHoldRetiredSenders() {
        var senders = SenderRetirement()
        XCTAssertTrue(senders.hold())
        XCTAssertFalse(senders.retire())
        XCTAssertFalse(senders.hold(), "a run starting after the change takes the served senders")
        XCTAssertEqual(senders.holders, 1)
        XCTAssertTrue(senders.release())
    }

    func testServedSendersNeverCloseWhenRunsEnd() {
        var senders = SenderRetirement()
        for _ in 0..<3 { XCTAssertTrue(senders.hold()) }
        for _ in 0..<3 { XCTAssertFalse(senders.release()) }
        XCTAssertFalse(senders.release(), "an extra release neither closes nor goes below zero")
        XCTAssertEqual(senders.holders, 0)
        XCTAssertFalse(senders.closed)
    }

    func testShutdownClosesHeldRetiredSendersOnceAndTheLastReleaseThenDoesNothing() {
        var senders = SenderRetirement()
        XCTAssertTrue(senders.hold())
        XCTAssertFalse(senders.retire())
        XCTAssertTrue(senders.shutDown())
        XCTAssertFalse(senders.shutDown())
        XCTAssertFalse(senders.release(), "already closed by shutdown")
    }

    func testShutdownClosesServedSendersAndARunMayStillHoldThem() {
        var senders = SenderRetirement()
        XCTAssertTrue(senders.shutDown())
        XCTAssertTrue(senders.hold(), "still the served ones: the run fails its deliveries and is handed back")
        XCTAssertFalse(senders.release())
    }

    // MARK: Through the directory

    private func entry(_ fingerprint: String) throws -> InstanceDirectory.Entry {
        let config = InstanceConfig(id: id, secretKey: String(repeating: "s", count: 32), apns: nil, webhook: nil)
        return InstanceDirectory.Entry(
            config: config, runtime: try InstanceRuntime(config: config), source: .store,
            fingerprint: fingerprint)
    }

    func testARunKeepsTheRuntimeItStartedWithAndTheRetiredOneClosesWhenTheRunEnds() async throws {
        let first = try entry("store:1")
        let directory = InstanceDirectory(runtimes: [])
        directory.install([id: first], storedVersion: 1)
        let held = try XCTUnwrap(directory.hold(id))
        XCTAssertTrue(held.lifetime === first.runtime?.lifetime)

        let second = try entry("store:2")
        directory.retire(directory.install([id: second], storedVersion: 2).compactMap(\.runtime))
        XCTAssertTrue(held.lifetime.isOpen, "a run still holds the old senders")
        XCTAssertEqual(directory.runtimesToClose.count, 2, "shutdown would close the served and the retired ones")
        let next = try XCTUnwrap(directory.hold(id))
        XCTAssertTrue(next.lifetime === second.runtime?.lifetime, "a new run takes the served senders")

        held.release()
        XCTAssertFalse(held.lifetime.isOpen, "the last run holding them ended")
        let unanswered = await held.closeAtShutdown(gracePeriod: .seconds(1))
        XCTAssertEqual(unanswered, 0, "shutdown waits for that close, no second one")
        next.release()
        XCTAssertTrue(next.lifetime.isOpen, "served senders stay open")
    }

    func testADeletedInstanceNoRunHoldsClosesAtOnceAndIsNotHeldAgain() throws {
        let only = try entry("store:1")
        let directory = InstanceDirectory(runtimes: [])
        directory.install([id: only], storedVersion: 1)
        directory.retire(directory.install([:], storedVersion: 2).compactMap(\.runtime))
        XCTAssertFalse(try XCTUnwrap(only.runtime).lifetime.isOpen)
        XCTAssertNil(directory.hold(id))
    }
}
