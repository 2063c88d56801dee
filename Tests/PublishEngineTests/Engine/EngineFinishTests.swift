import APNsClient
import BeamsModel
import Foundation
import JSON
import PublishEngine
import PushStore
import XCTest

/// How a publish ends: its state, summary and webhooks, for users publishes also after a crash.
final class EngineFinishTests: XCTestCase {
    private func run(_ fixture: EngineFixture, _ sender: FakeSender = FakeSender()) async {
        let store = ScriptedStore(fixture.base)
        await fixture.runToFinish(store, sender: sender)
    }

    func testUsersPublishReportsDeliveredFailedAndUsersWithoutDevices() async throws {
        let fixture = EngineFixture()
        let alice = try await fixture.addDevices(1...2, interest: nil, user: "alice")
        let bob = try await fixture.addDevices(3...3, interest: nil, user: "bob")
        try await fixture.enqueue("users-1", kind: .users, targets: ["alice", "bob", "carol"])
        let sender = FakeSender()
        sender.script(alice[0], .respond(.rejected(400, .badDeviceToken)))
        sender.script(bob[0], .respond(.rejected(410, .unregistered)))
        await run(fixture, sender)

        await waitForState("users webhook", fixture.webhooks.calls) { calls in
            calls.contains(
                .usersAttempt(publishID: "users-1", delivered: ["alice"], failed: ["bob"], noDevices: ["carol"]))
        }
        let status = try await fixture.status("users-1")
        XCTAssertEqual(status?.accepted, 1)
        XCTAssertEqual(status?.failed, 2)
    }

    func testResumedUsersPublishRebuildsTheOutcomeFromStoredResults() async throws {
        let fixture = EngineFixture()
        let alice = try await fixture.addDevices(1...1, interest: nil, user: "alice")[0]
        let bob = try await fixture.addDevices(2...2, interest: nil, user: "bob")[0]
        try await fixture.enqueue("users-2", kind: .users, targets: ["alice", "bob"])
        let storeA = ScriptedStore(fixture.base)
        let senderA = FakeSender()
        senderA.script(bob, .hold)
        let nodeA = RunningEngine(fixture.makeEngine(store: storeA, sender: senderA))
        await storeA.waitFor("alice's answer checkpointed") { $0.checkpointedResults == 1 }
        storeA.crash()

        let senderB = FakeSender()
        senderB.script(bob, .respond(.rejected(400, .badDeviceToken)))
        await fixture.finishOnSecondNode(sender: senderB)
        XCTAssertEqual(senderB.sentTokens, [bob])
        XCTAssertEqual(senderA.sentTokens, [alice, bob])
        await waitForState("users webhook", fixture.webhooks.calls) { calls in
            calls.contains(.usersAttempt(publishID: "users-2", delivered: ["alice"], failed: ["bob"], noDevices: []))
        }
        await nodeA.stop()
    }

    func testUnreadablePlanFailsThePublishWithoutSending() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...2)
        try await fixture.enqueue("bad-plan", payload: Data("not a plan".utf8))
        let sender = FakeSender()
        await run(fixture, sender)

        XCTAssertEqual(sender.sent, [])
        let status = try await fixture.status("bad-plan")
        XCTAssertEqual(status?.state, .failed)
        XCTAssertEqual(status?.summary, "unreadable publish plan")
        await waitForState("FINISHED webhook", fixture.webhooks.calls) {
            $0.contains(.finished(publishID: "bad-plan", accepted: 0, failed: 0))
        }
    }

    func testPublishForAnInstanceNoLongerConfiguredFails() async throws {
        let fixture = EngineFixture()
        let job = PublishJob(
            instanceID: "0a0b0c0d-0000-4000-8000-000000000000", publishID: "orphan", kind: .interests,
            targets: ["news"], payload: EngineFixture.plan(), createdAt: Date())
        _ = try await fixture.base.enqueuePublish(job)
        await run(fixture)
        let status = try await fixture.base.publishStatus(instanceID: job.instanceID, publishID: "orphan")
        XCTAssertEqual(status?.state, .failed)
        XCTAssertEqual(status?.summary, "instance is no longer configured")
    }

    func testInstanceWithoutCredentialsRecordsEveryTargetAsNotSent() async throws {
        let fixture = EngineFixture()
        fixture.credentials = nil
        try await fixture.addDevices(1...3)
        try await fixture.enqueue("no-creds")
        let sender = FakeSender()
        await run(fixture, sender)

        XCTAssertEqual(sender.sent, [])
        let status = try await fixture.status("no-creds")
        XCTAssertEqual(status?.state, .finished)
        XCTAssertEqual(status?.failedByReason, ["NoAPNsCredentials": 3])
        XCTAssertEqual(status?.targetsTotal, 3)
        XCTAssertEqual(status?.summary, "no APNs credentials configured: nothing was sent")
    }

    func testPublishWithoutAnAPNsPartSendsNothingToIOSDevices() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...2)
        try await fixture.enqueue("fcm-only", payload: EngineFixture.plan(apnsPayload: nil, platforms: ["fcm"]))
        let sender = FakeSender()
        await run(fixture, sender)

        XCTAssertEqual(sender.sent, [])
        let status = try await fixture.status("fcm-only")
        XCTAssertEqual(status?.state, .finished)
        XCTAssertNil(status?.summary)
        XCTAssertEqual(status?.targetsTotal, 0, "iOS devices are not targets of a publish without an apns part")
    }

    func testPublishWebhooksAreStartedThenFinished() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...2)
        try await fixture.enqueue("hooks")
        await run(fixture)
        await waitForState("FINISHED webhook", fixture.webhooks.calls) { $0.count == 2 }
        XCTAssertEqual(
            fixture.webhooks.calls.read { $0 },
            [.started(publishID: "hooks"), .finished(publishID: "hooks", accepted: 2, failed: 0)])
    }

    func testRequestCarriesThePlansHeaders() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...1)
        var object: [String: JSONValue] = [
            "v": .int(PublishPlan.version), "platforms": .array([.string("apns")]),
            "requestBody": .null, "apnsPayload": .string(#"{"aps":{"content-available":1}}"#),
            "priority": .int(10), "collapseId": .string("c-1"),
        ]
        object["expiration"] = .int(2_000_000_000)
        try await fixture.enqueue("headers", payload: Data(JSONValue.object(object).serialized()))
        let sender = FakeSender(defaultAnswer: .hold)
        let store = ScriptedStore(fixture.base)
        let node = RunningEngine(fixture.makeEngine(store: store, sender: sender))
        await waitForState("in flight", sender.state) { $0.held.count == 1 }
        let request = try XCTUnwrap(sender.heldRequests.first)
        XCTAssertEqual(request.topic, "com.example.app")
        XCTAssertEqual(request.pushType, .background)
        XCTAssertEqual(request.priority, .powerConsidered, "background pushes go with priority 5")
        XCTAssertEqual(request.collapseID, "c-1")
        XCTAssertEqual(request.expiration, Date(timeIntervalSince1970: 2_000_000_000))
        sender.releaseAll()
        await store.waitFor("finished") { $0.finishedCount == 1 }
        await node.stop()
    }
}
