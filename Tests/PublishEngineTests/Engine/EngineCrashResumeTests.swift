import APNsClient
import BeamsModel
import Foundation
import PublishEngine
import PushStore
import XCTest

/// A node dies mid-publish; another takes the job over once the lease expired and sends exactly what had no
/// recorded answer.
final class EngineCrashResumeTests: XCTestCase {
    func testSecondNodeResumesAfterLeaseExpiryAndSendsOnlyTheUnansweredTargets() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...10)
        let job = try await fixture.enqueue("crash-1")
        let refs = try await fixture.refs(job)

        let storeA = ScriptedStore(fixture.base)
        let senderA = FakeSender(defaultAnswer: .hold)
        for token in tokens.prefix(3) { senderA.script(token, .respond(.accepted)) }
        let nodeA = RunningEngine(fixture.makeEngine(store: storeA, sender: senderA))
        await waitForState("seven in flight on node A", senderA.state) { $0.held.count == 7 }
        await storeA.waitFor("the three answers checkpointed") { $0.checkpointedResults == 3 }
        XCTAssertEqual(storeA.events.cursor, refs[tokens[2]])
        storeA.crash()

        // Node B's clock is past node A's lease.
        let senderB = FakeSender()
        await fixture.finishOnSecondNode(sender: senderB)

        XCTAssertEqual(senderB.sentTokens, Array(tokens[3...]))
        let status = try await fixture.status("crash-1")
        XCTAssertEqual(status?.state, .finished)
        XCTAssertEqual(status?.attempts, 2)
        XCTAssertEqual(status?.accepted, 10)
        XCTAssertEqual(status?.counters[.targets], 10)
        XCTAssertEqual(status?.targetsTotal, 10)
        await waitForState("FINISHED webhook", fixture.webhooks.calls) {
            $0.contains(.finished(publishID: "crash-1", accepted: 10, failed: 0))
        }
        XCTAssertEqual(
            fixture.webhooks.calls.read { $0.filter { $0 == .started(publishID: "crash-1") }.count }, 1,
            "STARTED goes out on the first attempt only")
        await nodeA.stop()
        XCTAssertEqual(storeA.events.finishedCount, 0)
    }

    func testOutOfOrderAnswersKeepTheCursorAtTheLowWatermarkAndAreNotResent() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...6)
        let job = try await fixture.enqueue("gaps-1")
        let refs = try await fixture.refs(job)

        let storeA = ScriptedStore(fixture.base)
        let senderA = FakeSender()
        senderA.script(tokens[1], .hold)
        let nodeA = RunningEngine(fixture.makeEngine(store: storeA, sender: senderA))
        await storeA.waitFor("five answers checkpointed") { $0.checkpointedResults == 5 }
        XCTAssertEqual(senderA.heldTokens, [tokens[1]])
        XCTAssertEqual(storeA.events.cursor, refs[tokens[0]], "the cursor stops below the unanswered target")
        let running = try await fixture.status("gaps-1")
        let jobID = try XCTUnwrap(running).id
        let answeredAbove = try await fixture.base.answeredTargets(jobID)
        XCTAssertEqual(answeredAbove, Set(tokens[2...].compactMap { refs[$0] }))
        storeA.crash()

        let senderB = FakeSender()
        await fixture.finishOnSecondNode(sender: senderB)

        XCTAssertEqual(senderB.sentTokens, [tokens[1]], "only the target without an answer is sent again")
        let status = try await fixture.status("gaps-1")
        XCTAssertEqual(status?.accepted, 6)
        XCTAssertEqual(status?.counters[.targets], 6)
        XCTAssertEqual(status?.targetsTotal, 6)
        let answeredAfter = try await fixture.base.answeredTargets(jobID)
        XCTAssertEqual(answeredAfter, [], "a finished job forgets the answers above its cursor")
        await nodeA.stop()
    }

    func testCheckpointedResultsUpdateDeviceHealthInTheStore() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...2)
        try await fixture.enqueue("health-1")
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender()
        sender.script(tokens[1], .respond(.rejected(400, .payloadTooLarge)))
        await fixture.runToFinish(store, sender: sender)

        let accepted = try await fixture.device(tokens[0])
        XCTAssertEqual(accepted?.lastResult?.status, 200)
        let refused = try await fixture.device(tokens[1])
        XCTAssertEqual(refused?.lastResult?.status, 400)
        XCTAssertEqual(refused?.lastResult?.reason, "PayloadTooLarge")
        XCTAssertNil(refused?.invalidatedAt, "a payload problem says nothing about the device")
        let status = try await fixture.status("health-1")
        XCTAssertEqual(status?.failedByReason, ["PayloadTooLarge": 1])
    }
}
