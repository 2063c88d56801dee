import APNsClient
import Foundation
import PublishEngine
import PushStore
import XCTest

/// A node cut off from the store (its renewals fail, or hang on a stalled connection) stops sending before its
/// lease can run out, keeps the answers in flight for its last checkpoint, and leaves the rest to the node that
/// claims the job after the lease: every device is sent exactly once.
final class EngineLeaseFenceTests: XCTestCase {
    /// Renewed every 300 ms; fenced 720 ms after the last successful renewal was sent.
    private static let lease = Duration.milliseconds(900)

    /// Runs a 6-device publish (2 per page) on node A, the second page's read held until the test opens it and
    /// the first page's answers held; cuts node A off (`cutOff`) after a successful renewal, opens the page once
    /// the fence's deadline passed, then lets node B, whose clock is past A's lease, take the job over.
    private func assertCutOffNodeStopsSending(
        cutOff: (ScriptedStore) -> Void, reconnect: (ScriptedStore) -> Void,
        file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...6)
        let job = try await fixture.enqueue("fence-1")
        let refs = try await fixture.refs(job)
        let storeA = ScriptedStore(fixture.base)
        let secondPage = try XCTUnwrap(refs[tokens[1]])
        storeA.gate(after: secondPage)
        let senderA = FakeSender(defaultAnswer: .hold)
        var settings = EngineFixture.settings()
        settings.pageSize = 2
        settings.leaseDuration = Self.lease
        let nodeA = RunningEngine(fixture.makeEngine(store: storeA, sender: senderA, settings: settings))
        await waitForState("the first page in flight", senderA.state) { $0.held.count == 2 }
        await waitForState("the second page read waits at the gate", storeA.state) { !$0.gateWaiters.isEmpty }
        await storeA.waitFor("a renewal") { $0.contains(.renewed) }

        // Node A can no longer claim either: it must not take the job back once its run ends.
        storeA.failAlways(.claim)
        cutOff(storeA)
        let cut = ContinuousClock.now
        // Every renewal sent from now on fails or hangs, so the run's deadline is at most lease - margin away,
        // before the store's lease (counted from the same renewal, without the margin) runs out.
        try await Task.sleep(
            until: cut + Self.lease - LeaseClock.margin(for: Self.lease) + .milliseconds(20),
            clock: .continuous)
        storeA.open(after: secondPage)
        await storeA.waitFor("the second page was read") { $0.contains(.pageRead(after: secondPage)) }
        // The answers in flight when the run fenced itself are kept and written by its last checkpoint.
        senderA.releaseAll()
        reconnect(storeA)
        await storeA.waitFor("the answers in flight checkpointed") { $0.checkpointedResults == 2 }

        let senderB = FakeSender()
        await fixture.finishOnSecondNode(sender: senderB)
        await nodeA.stop()

        XCTAssertEqual(
            senderA.sentTokens, Array(tokens.prefix(2)), "node A sent nothing after its deadline",
            file: file, line: line)
        XCTAssertEqual(senderB.sentTokens, Array(tokens[2...]), file: file, line: line)
        XCTAssertEqual(storeA.events.finishedCount, 0, file: file, line: line)
        let status = try await fixture.status("fence-1")
        XCTAssertEqual(status?.state, .finished, file: file, line: line)
        XCTAssertEqual(status?.accepted, 6, "every device exactly once", file: file, line: line)
        XCTAssertEqual(status?.attempts, 2, file: file, line: line)
    }

    func testANodeWhoseRenewalsFailStopsSendingBeforeItsLeaseEnds() async throws {
        try await assertCutOffNodeStopsSending(cutOff: { $0.failAlways(.renew) }, reconnect: { _ in })
    }

    func testANodeWhoseRenewalsHangStopsSendingBeforeItsLeaseEnds() async throws {
        // The hung renewals succeed once the connection recovers: answered late, they cannot undo the fence.
        try await assertCutOffNodeStopsSending(cutOff: { $0.stall(.renew) }, reconnect: { $0.unstall(.renew) })
    }
}
