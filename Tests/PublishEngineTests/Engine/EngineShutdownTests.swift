import APNsClient
import Foundation
import PushStore
import XCTest

@testable import PublishEngine

/// Stopping the engine (cancelling its task, or `shutdown`) mid-publish: nothing answered is sent again, nothing
/// unanswered is lost.
final class EngineShutdownTests: XCTestCase {
    func testCancellingMidPageReturnsUnansweredNotificationsToTheQueue() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...10)
        let job = try await fixture.enqueue("stop-1")
        let refs = try await fixture.refs(job)

        var settings = EngineFixture.settings()
        settings.pageSize = 4
        let storeA = ScriptedStore(fixture.base)
        let senderA = FakeSender(window: 5, defaultAnswer: .hold)
        for token in tokens.prefix(3) { senderA.script(token, .respond(.accepted)) }
        let nodeA = RunningEngine(fixture.makeEngine(store: storeA, sender: senderA, settings: settings))
        // Tokens 4–8 fill the window; token 9 (third page) waits for a slot.
        await waitForState("window full, one waiting", senderA.state) {
            $0.held.count == 5 && $0.slotWaiters.count == 1
        }
        await storeA.waitFor("three answers checkpointed") { $0.checkpointedResults == 3 }
        await nodeA.stop()

        XCTAssertEqual(senderA.sentTokens, Array(tokens[0..<8]))
        XCTAssertEqual(senderA.state.read(\.shutdownCalls), 1)
        XCTAssertEqual(storeA.events.finishedCount, 0)
        let paused = try await fixture.status("stop-1")
        XCTAssertEqual(paused?.state, .running)
        XCTAssertEqual(paused?.accepted, 3)
        XCTAssertEqual(storeA.events.cursor, refs[tokens[2]])

        // The lease was handed back: the next node claims at once, without waiting for it to expire.
        let senderB = FakeSender()
        await fixture.finishOnSecondNode(sender: senderB, clockOffset: 0)

        XCTAssertEqual(senderB.sentTokens, Array(tokens[3...]))
        let status = try await fixture.status("stop-1")
        XCTAssertEqual(status?.state, .finished)
        XCTAssertEqual(status?.accepted, 10)
        XCTAssertEqual(status?.targetsTotal, 10)
    }

    func testShutdownWaitsForAnswersInFlightWithinTheGracePeriod() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...3)
        try await fixture.enqueue("grace-1")
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender(defaultAnswer: .hold)
        let engine = fixture.makeEngine(store: store, sender: sender)
        let running = Task { await engine.run() }
        await waitForState("three in flight", sender.state) { $0.held.count == 3 }

        let shutdown = Task { await engine.shutdown(gracePeriod: .seconds(3600)) }
        await waitForState("stop requested", engine.phase) { $0.stop != nil }
        sender.releaseAll()
        await shutdown.value
        await running.value

        XCTAssertEqual(sender.sentTokens, tokens)
        let status = try await fixture.status("grace-1")
        XCTAssertEqual(status?.state, .finished, "every answer came within the grace period")
        XCTAssertEqual(status?.accepted, 3)
    }

    func testShutdownBeforeRunShutsTheSenderDown() async {
        let fixture = EngineFixture()
        let sender = FakeSender()
        let engine = fixture.makeEngine(store: ScriptedStore(fixture.base), sender: sender)
        await engine.shutdown(gracePeriod: .seconds(0))
        XCTAssertEqual(sender.state.read(\.shutdownCalls), 1)
        await engine.run()  // returns at once: already stopped
        XCTAssertEqual(sender.state.read(\.shutdownCalls), 1)
    }

    func testEngineStoppedWhileIdleClaimsNothingMore() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...1)
        let store = ScriptedStore(fixture.base)
        let node = RunningEngine(fixture.makeEngine(store: store, sender: FakeSender()))
        await store.waitFor("the start-up claim") { $0.claimAttempts >= 1 }
        await node.stop()
        try await fixture.enqueue("late")
        node.engine.wake()
        let status = try await fixture.status("late")
        XCTAssertEqual(status?.state, .queued)
        XCTAssertEqual(store.events.claims, 0)
    }
}
