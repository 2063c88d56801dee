import BeamsModel
import Foundation
import PublishEngine
import PushStore
import XCTest

/// The publish slots in the running engine: a paced publish holds none between its tokens, and a small publish has
/// an express slot while bulk ones hold every regular slot.
final class EngineSlotFairnessTests: XCTestCase {
    private func pacedPlan(perMinute: Int) throws -> Data {
        let body = #"{"interests":["slow"],"apns":{"aps":{"alert":"hi"}}}"#
        let request = try PublishRequest.parse(Array(body.utf8), kind: .interests)
        var delivery = DeliveryOptions()
        delivery.throttlePerMinute = perMinute
        return try PublishPlan(
            request: request, body: Array(body.utf8), instanceID: "inst", publishID: "pub",
            delivery: delivery
        ).encoded()
    }

    func testPacedPublishGivesItsOnlySlotUpBetweenTokensAndStillSendsEachDeviceOnce() async throws {
        let fixture = EngineFixture()
        let slow = try await fixture.addDevices(1...3, interest: "slow")
        let fast = try await fixture.addDevices(4...5, interest: "fast")
        // One a second: the run waits about a second for each token after the first.
        _ = try await fixture.enqueue("slow", targets: ["slow"], payload: pacedPlan(perMinute: 60))
        var settings = EngineFixture.settings()
        settings.concurrentPublishes = 1
        settings.expressPublishSlots = 0
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender()
        let node = RunningEngine(fixture.makeEngine(store: store, sender: sender, settings: settings))
        await waitForState("the first paced delivery", sender.state) { $0.sent.count >= 1 }

        _ = try await fixture.enqueue("fast", targets: ["fast"])
        node.engine.wake()
        await store.waitFor("the unpaced publish finished") { $0.finishedCount >= 1 }
        let slowSoFar = sender.sentTokens.filter { slow.contains($0) }.count
        XCTAssertLessThan(slowSoFar, 3, "the unpaced publish ran in the only slot while the paced one waited")
        let fastStatus = try await fixture.status("fast")
        XCTAssertEqual(fastStatus?.state, .finished)

        await store.waitFor("both finished") { $0.finishedCount == 2 }
        await node.stop()
        XCTAssertEqual(sender.sentTokens.sorted(), (slow + fast).sorted(), "each device once")
        let slowStatus = try await fixture.status("slow")
        XCTAssertEqual(slowStatus?.accepted, 3)
    }

    func testStoppingWhileParkedHandsThePacedPublishBackAndTheNextNodeFinishesItOnce() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...3, interest: "slow")
        // One a minute: after the first delivery the run is parked for a minute.
        _ = try await fixture.enqueue("parked", targets: ["slow"], payload: pacedPlan(perMinute: 1))
        let storeA = ScriptedStore(fixture.base)
        let senderA = FakeSender()
        let nodeA = RunningEngine(fixture.makeEngine(store: storeA, sender: senderA))
        await storeA.waitFor("the first delivery checkpointed") { $0.checkpointedResults == 1 }
        let started = ContinuousClock.now
        await nodeA.stop()
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5), "a parked run stops at once, not at its token")
        XCTAssertEqual(senderA.sentTokens, [tokens[0]])
        XCTAssertEqual(storeA.events.finishedCount, 0)

        // Handed back with its lease: another node claims it at once and sends the rest, each device once.
        let storeB = ScriptedStore(fixture.base)
        let senderB = FakeSender()
        let nodeB = RunningEngine(
            fixture.makeEngine(
                store: storeB, sender: senderB,
                settings: EngineFixture.settings(workerID: "node-b")))
        await waitForState("node B's first delivery", senderB.state) { $0.sent.count == 1 }
        await nodeB.stop()
        XCTAssertEqual(senderB.sentTokens, [tokens[1]], "resumed after the checkpoint, at its pace")
        let status = try await fixture.status("parked")
        XCTAssertEqual(status?.state, .running)
        XCTAssertEqual(status?.accepted, 2)
    }

    func testSmallUsersPublishRunsInAnExpressSlotWhileABulkOneHoldsTheRegularSlot() async throws {
        let fixture = EngineFixture()
        let bulk = try await fixture.addDevices(1...1, interest: "bulk")
        let small = try await fixture.addDevices(2...2, interest: nil, user: "alice")
        _ = try await fixture.enqueue("bulk", targets: ["bulk"])
        var settings = EngineFixture.settings()
        settings.concurrentPublishes = 1
        settings.expressPublishSlots = 1
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender()
        sender.script(bulk[0], .hold)
        let node = RunningEngine(fixture.makeEngine(store: store, sender: sender, settings: settings))
        await waitForState("the bulk publish in flight", sender.state) { $0.held.count == 1 }

        _ = try await fixture.enqueue("small", kind: .users, targets: ["alice"])
        node.engine.wake()
        await store.waitFor("the small publish finished") { $0.finishedCount == 1 }
        XCTAssertEqual(sender.heldTokens, [bulk[0]], "the bulk publish still holds the regular slot")
        XCTAssertEqual(sender.sentTokens, [bulk[0], small[0]])
        sender.release(bulk[0])
        await store.waitFor("both finished") { $0.finishedCount == 2 }
        await node.stop()
    }
}
