import APNsClient
import Foundation
import Observability
import PublishEngine
import PushStore
import TestSupport
import XCTest

/// Another worker took the job over: this run stops sending, writes nothing more and leaves the job to its owner.
final class EngineLeaseTests: XCTestCase {
    /// Starts a 6-device publish read 2 per page, with the second page held back, and both first-page answers held.
    private func startTwoPages(_ fixture: EngineFixture, settings: PublishEngine.Settings)
        async throws -> (ScriptedStore, FakeSender, RunningEngine, [String: Int64])
    {
        try await fixture.addDevices(1...6)
        let job = try await fixture.enqueue("lease-1")
        let refs = try await fixture.refs(job)
        let store = ScriptedStore(fixture.base)
        store.gate(after: try XCTUnwrap(refs[fixture.tokens[1]]))
        let sender = FakeSender(defaultAnswer: .hold)
        let node = RunningEngine(fixture.makeEngine(store: store, sender: sender, settings: settings))
        await waitForState("the first page in flight", sender.state) { $0.held.count == 2 }
        // The prefetch of the second page must be waiting at the gate before the lease is lost: a run that sees
        // the loss first never reads it, and the tests' "second page was read" would wait forever.
        await waitForState("the second page read waits at the gate", store.state) { !$0.gateWaiters.isEmpty }
        return (store, sender, node, refs)
    }

    private func takeOver(_ fixture: EngineFixture) async throws {
        let claimed = try await fixture.base.claimJob(
            workerID: "node-b", leaseDuration: .seconds(30),
            now: Date().addingTimeInterval(3600))
        XCTAssertEqual(claimed?.attempt, 2)
    }

    func testLeaseLostAtACheckpointStopsSending() async throws {
        let fixture = EngineFixture()
        var settings = EngineFixture.settings()
        settings.pageSize = 2
        let (store, sender, node, refs) = try await startTwoPages(fixture, settings: settings)
        try await takeOver(fixture)
        sender.release(fixture.tokens[0])
        await store.waitFor("the checkpoint found the lease lost") { $0.leaseLossSeen }
        // The store's answer reaches the run on another task: the page read below must come after the run knows.
        try await eventually("the run stopped for the lost lease") { fixture.metrics.value(.leasesLost) == 1 }
        let secondPage = try XCTUnwrap(refs[fixture.tokens[1]])
        store.open(after: secondPage)
        await store.waitFor("the second page was read") { $0.contains(.pageRead(after: secondPage)) }
        sender.releaseAll()
        await node.stop()

        XCTAssertEqual(sender.sentTokens, Array(fixture.tokens.prefix(2)), "nothing sent after the loss")
        XCTAssertEqual(store.events.checkpointedResults, 0)
        XCTAssertEqual(store.events.finishedCount, 0)
        let status = try await fixture.status("lease-1")
        XCTAssertEqual(status?.state, .running, "the job stays with its new owner")
        XCTAssertEqual(status?.accepted ?? 0, 0)
    }

    func testLeaseLostAtARenewalStopsSending() async throws {
        let fixture = EngineFixture()
        var settings = EngineFixture.settings()
        settings.pageSize = 2
        // Renewed every 20 ms: a real deadline of the engine's, which the test waits out by event.
        settings.leaseDuration = .milliseconds(60)
        let (store, sender, node, refs) = try await startTwoPages(fixture, settings: settings)
        await store.waitFor("a renewal") { $0.contains(.renewed) }
        try await takeOver(fixture)
        await store.waitFor("the renewal found the lease lost") { $0.leaseLossSeen }
        try await eventually("the run stopped for the lost lease") { fixture.metrics.value(.leasesLost) == 1 }
        let secondPage = try XCTUnwrap(refs[fixture.tokens[1]])
        store.open(after: secondPage)
        await store.waitFor("the second page was read") { $0.contains(.pageRead(after: secondPage)) }
        sender.releaseAll()
        await node.stop()

        XCTAssertEqual(sender.sentTokens, Array(fixture.tokens.prefix(2)))
        XCTAssertEqual(store.events.checkpointedResults, 0, "answers after the loss are not written")
        XCTAssertEqual(store.events.finishedCount, 0)
    }
}
