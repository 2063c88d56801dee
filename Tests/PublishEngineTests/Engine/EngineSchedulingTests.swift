import APNsClient
import Foundation
import PublishEngine
import PushStore
import XCTest

/// Claiming: on wake-ups (never by waiting for the poll), up to `concurrentPublishes` side by side, and the
/// sender's window shared so a small publish is not held back by a huge one.
final class EngineSchedulingTests: XCTestCase {
    func testSmallPublishIsNotHeldBackByAHugeOne() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...100, interest: "everyone")
        let small = try await fixture.addDevices(101...101, interest: "few")[0]
        try await fixture.enqueue("huge", targets: ["everyone"])
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender(window: 4, defaultAnswer: .hold)
        sender.script(small, .respond(.accepted))
        let node = RunningEngine(fixture.makeEngine(store: store, sender: sender))
        await waitForState("the huge publish fills the window", sender.state) {
            $0.held.count == 4 && $0.slotWaiters.count == 1
        }

        try await fixture.enqueue("small", targets: ["few"])
        node.engine.wake()
        await waitForState("the small publish waits its turn", sender.state) { $0.slotWaiters.count == 2 }
        sender.release(fixture.tokens[0])
        sender.release(fixture.tokens[1])
        await waitForState("FINISHED for the small publish", fixture.webhooks.calls) {
            $0.contains(.finished(publishID: "small", accepted: 1, failed: 0))
        }
        XCTAssertLessThanOrEqual(sender.sentTokens.count, 8, "the huge publish is far from done")

        sender.state.update { $0.defaultAnswer = .respond(.accepted) }
        sender.releaseAll()
        await store.waitFor("both finished") { $0.finishedCount == 2 }
        await node.stop()
        let huge = try await fixture.status("huge")
        XCTAssertEqual(huge?.accepted, 100)
        XCTAssertEqual(Set(sender.sentTokens).count, 101)
        XCTAssertEqual(sender.sentTokens.count, 101, "each device once")
    }

    func testEnqueuedPublishStartsOnWakeWithoutAPoll() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...1)
        let store = ScriptedStore(fixture.base)
        let node = RunningEngine(fixture.makeEngine(store: store, sender: FakeSender()))
        await store.waitFor("the start-up claim found nothing") { $0.claimAttempts >= 1 }
        try await fixture.enqueue("woken")
        node.engine.wake()
        await store.waitFor("finished") { $0.finishedCount == 1 }
        await node.stop()
    }

    func testQueuedPublishesStartWhenTheEngineStarts() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...1)
        try await fixture.enqueue("left-from-before")
        let store = ScriptedStore(fixture.base)
        await fixture.runToFinish(store)
    }

    func testAtMostConcurrentPublishesRunAndTheNextStartsWhenOneEnds() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...1)
        try await fixture.enqueue("first")
        try await fixture.enqueue("second")
        var settings = EngineFixture.settings()
        settings.concurrentPublishes = 1
        // Without express slots: a claimed bulk publish would wait in one of them (see the express test below).
        settings.expressPublishSlots = 0
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender()
        sender.script(tokens[0], .hold)
        let node = RunningEngine(fixture.makeEngine(store: store, sender: sender, settings: settings))
        await waitForState("the first publish in flight", sender.state) { $0.held.count == 1 }
        node.engine.wake()
        XCTAssertEqual(store.events.claims, 1)
        let second = try await fixture.status("second")
        XCTAssertEqual(second?.state, .queued)

        sender.release(tokens[0])
        await store.waitFor("both finished") { $0.finishedCount == 2 }
        await node.stop()
        XCTAssertEqual(store.events.claims, 2)
        XCTAssertEqual(sender.sentTokens, [tokens[0], tokens[0]])
    }

    func testTwoPublishesRunSideBySide() async throws {
        let fixture = EngineFixture()
        let a = try await fixture.addDevices(1...1, interest: "a")[0]
        let b = try await fixture.addDevices(2...2, interest: "b")[0]
        try await fixture.enqueue("pa", targets: ["a"])
        try await fixture.enqueue("pb", targets: ["b"])
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender(defaultAnswer: .hold)
        let node = RunningEngine(fixture.makeEngine(store: store, sender: sender))
        await waitForState("both in flight at once", sender.state) { $0.held.count == 2 }
        XCTAssertEqual(Set(sender.heldTokens), [a, b])
        sender.releaseAll()
        await store.waitFor("both finished") { $0.finishedCount == 2 }
        await node.stop()
    }
}
