import APNsClient
import BeamsModel
import Foundation
import PublishEngine
import PushStore
import XCTest

/// The store cannot write for a while (`StoreUnavailableError`): results wait in memory and are written again,
/// sending pauses once too many wait, and nothing is lost or counted twice.
final class EngineStoreOutageTests: XCTestCase {
    func testCheckpointOutageIsRetriedWithoutLosingOrRepeatingResults() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...5)
        try await fixture.enqueue("outage-1")
        let store = ScriptedStore(fixture.base)
        store.fail(.checkpoint, times: 3)
        let sender = FakeSender()
        await fixture.runToFinish(store, sender: sender)

        XCTAssertEqual(store.events.checkpointFailures, 3)
        XCTAssertEqual(store.events.checkpointedResults, 5, "every result written exactly once")
        XCTAssertEqual(sender.sentTokens, tokens)
        let status = try await fixture.status("outage-1")
        XCTAssertEqual(status?.accepted, 5)
        XCTAssertEqual(status?.counters[.targets], 5)
        for token in tokens {
            let device = try await fixture.device(token)
            XCTAssertEqual(device?.lastResult?.status, 200)
        }
    }

    func testSendingPausesWhileTooManyResultsWaitForACheckpoint() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...10)
        try await fixture.enqueue("outage-2")
        var settings = EngineFixture.settings()
        settings.maxUncheckpointedResults = 2
        settings.checkpointInterval = .milliseconds(1)
        let store = ScriptedStore(fixture.base)
        store.failAlways(.checkpoint)
        let sender = FakeSender()
        let node = RunningEngine(fixture.makeEngine(store: store, sender: sender, settings: settings))
        await store.waitFor("three failed checkpoints") { $0.checkpointFailures >= 3 }
        XCTAssertEqual(sender.sentTokens, Array(tokens.prefix(2)), "sending waits for the store")

        store.recover(.checkpoint)
        await store.waitFor("finished") { $0.finishedCount == 1 }
        await node.stop()
        XCTAssertEqual(sender.sentTokens, tokens)
        let status = try await fixture.status("outage-2")
        XCTAssertEqual(status?.accepted, 10)
        XCTAssertEqual(store.events.checkpointedResults, 10)
    }

    func testFinishingWaitsForTheStoreToWriteAgain() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...2)
        try await fixture.enqueue("outage-3")
        let store = ScriptedStore(fixture.base)
        store.fail(.finish, times: 4)
        await fixture.runToFinish(store)
        let status = try await fixture.status("outage-3")
        XCTAssertEqual(status?.state, .finished)
        XCTAssertEqual(status?.accepted, 2)
    }

    func testPageReadOutageIsRetried() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...3)
        try await fixture.enqueue("outage-4")
        let store = ScriptedStore(fixture.base)
        store.fail(.targets, times: 2)
        let sender = FakeSender()
        await fixture.runToFinish(store, sender: sender)
        XCTAssertEqual(sender.sentTokens, tokens)
    }

    func testClaimOutageIsRetriedOnTheNextWake() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...1)
        let store = ScriptedStore(fixture.base)
        store.fail(.claim, times: 1)
        let node = RunningEngine(fixture.makeEngine(store: store, sender: FakeSender()))
        await store.waitFor("the failed start-up claim") { $0.claimAttempts >= 1 }
        try await fixture.enqueue("outage-5")
        node.engine.wake()
        await store.waitFor("finished") { $0.finishedCount == 1 }
        await node.stop()
    }

    func testStopDuringAnOutageKeepsTheUnwrittenResultsOutOfTheCounts() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...3)
        try await fixture.enqueue("outage-6")
        let storeA = ScriptedStore(fixture.base)
        storeA.failAlways(.checkpoint)
        let nodeA = RunningEngine(fixture.makeEngine(store: storeA, sender: FakeSender()))
        await storeA.waitFor("the last checkpoint failed") { $0.checkpointFailures >= 2 }
        await nodeA.stop()
        let paused = try await fixture.status("outage-6")
        XCTAssertEqual(paused?.accepted ?? 0, 0, "nothing was written")

        // What was answered but never written is sent again: repeated, never lost.
        let senderB = FakeSender()
        await fixture.finishOnSecondNode(sender: senderB)
        XCTAssertEqual(senderB.sentTokens, tokens)
        let status = try await fixture.status("outage-6")
        XCTAssertEqual(status?.accepted, 3)
    }
}
