import APNsClient
import BeamsModel
import Foundation
import Locking
import Logging
import PushStore
import XCTest

@testable import PublishEngine

/// Broadcast publishes through the engine with a scripted broadcaster: one send per channel, retries by the APNs
/// retry policy, Apple's reason recorded per channel, and a run that dies resumed at the first unanswered channel.
final class EngineBroadcastTests: XCTestCase {
    let channels = ["+/8AAAAAAAAAAAAAAAAAAA==", "+/8BAAAAAAAAAAAAAAAAAA==", "+/8CAAAAAAAAAAAAAAAAAA=="]
        .map { APNsChannelID($0)! }

    private func enqueue(_ fixture: EngineFixture, _ publishID: String) async throws {
        let plan = PublishPlan(
            broadcast: BroadcastPlan(
                channels: channels, payload: Array(#"{"aps":{"event":"end","timestamp":1}}"#.utf8),
                priority: 5, expiration: 0),
            body: Array("{}".utf8))
        try await fixture.enqueue(publishID, targets: [], payload: plan.encoded(), webhookURL: nil)
    }

    private func engine(
        _ fixture: EngineFixture, store: ScriptedStore, broadcaster: FakeBroadcaster,
        settings: PublishEngine.Settings = EngineFixture.settings()
    ) -> PublishEngine {
        PublishEngine(
            store: store, apns: FakeSender(),
            instances: [
                InstanceRuntime(
                    config: fixture.instanceConfig,
                    credentials: fixture.credentials)
            ],
            settings: settings, metrics: fixture.metrics, logger: Logger(label: "engine-test", level: .critical),
            webhooks: fixture.webhooks, broadcaster: broadcaster,
            broadcastRetryPolicy: APNsRetryPolicy(maxAttempts: 3, baseDelay: 0.001, maxDelay: 0.01))
    }

    func testEachChannelIsSentOnceRetriedOn500AndItsReasonRecorded() async throws {
        let fixture = EngineFixture()
        try await enqueue(fixture, "bc-1")
        let broadcaster = FakeBroadcaster()
        broadcaster.script(channels[0], [.answer(500, .internalServerError), .answer(200, nil)])
        broadcaster.script(channels[2], [.answer(400, .channelNotRegistered)])
        let store = ScriptedStore(fixture.base)
        let node = RunningEngine(engine(fixture, store: store, broadcaster: broadcaster))
        await store.waitFor("the publish finished") { $0.finishedCount == 1 }
        await node.stop()

        XCTAssertEqual(broadcaster.sent, [channels[0], channels[0], channels[1], channels[2]])
        let stored = try await fixture.status("bc-1")
        let status = try XCTUnwrap(stored)
        XCTAssertEqual(status.state, .finished)
        XCTAssertEqual(status.targetsTotal, 3)
        XCTAssertEqual(status.counters[.channelsAccepted], 2)
        XCTAssertEqual(status.counters[.channelsFailed(reason: "ChannelNotRegistered")], 1)
        XCTAssertEqual(status.counters[.channelAttempts(channel: channels[0].rawValue)], 2)
        XCTAssertEqual(
            status.counters[.channelFailed(channel: channels[2].rawValue, reason: "ChannelNotRegistered")], 1)
        XCTAssertEqual(status.accepted, 0, "no device was sent to")
    }

    func testTransportFailuresAreRetriedUntilTheAttemptsRunOut() async throws {
        let fixture = EngineFixture()
        try await enqueue(fixture, "bc-2")
        let broadcaster = FakeBroadcaster()
        broadcaster.script(channels[1], Array(repeating: .connectionLost, count: 5))
        let store = ScriptedStore(fixture.base)
        let node = RunningEngine(engine(fixture, store: store, broadcaster: broadcaster))
        await store.waitFor("the publish finished") { $0.finishedCount == 1 }
        await node.stop()
        XCTAssertEqual(broadcaster.sent.filter { $0 == channels[1] }.count, 3, "apns.maxAttempts")
        let stored = try await fixture.status("bc-2")
        let status = try XCTUnwrap(stored)
        XCTAssertEqual(status.counters[.channelsFailed(reason: "TransportError")], 1)
        XCTAssertEqual(status.counters[.channelsAccepted], 2)
    }

    func testASecondNodeResumesAtTheFirstUnansweredChannel() async throws {
        let fixture = EngineFixture()
        try await enqueue(fixture, "bc-3")
        let storeA = ScriptedStore(fixture.base)
        let broadcasterA = FakeBroadcaster()
        broadcasterA.script(channels[1], [.hold])
        let nodeA = RunningEngine(engine(fixture, store: storeA, broadcaster: broadcasterA))
        await waitForState("the second channel in flight on node A", broadcasterA.state) { $0.held == 1 }
        await storeA.waitFor("the first channel checkpointed") { $0.cursor == 1 }
        storeA.crash()

        let storeB = ScriptedStore(fixture.base, clockOffset: 3600)
        let broadcasterB = FakeBroadcaster()
        let nodeB = RunningEngine(
            engine(
                fixture, store: storeB, broadcaster: broadcasterB,
                settings: EngineFixture.settings(workerID: "node-b")))
        await storeB.waitFor("node B finished the publish") { $0.finishedCount == 1 }
        XCTAssertEqual(broadcasterB.sent, [channels[1], channels[2]])
        let stored = try await fixture.status("bc-3")
        let status = try XCTUnwrap(stored)
        XCTAssertEqual(status.attempts, 2)
        XCTAssertEqual(status.counters[.channelsAccepted], 3)
        XCTAssertEqual(status.targetsTotal, 3)
        await nodeA.stop()
        await nodeB.stop()
    }
}

/// A broadcaster answering from a script per channel (200 when the script is empty); `.hold` never answers until
/// `shutdown()`, which ends it `.shutdown` as the real client does.
final class FakeBroadcaster: BroadcastSending {
    enum Step: Sendable {
        case answer(Int, APNsReason?)
        case connectionLost
        case hold
    }

    struct State: Sendable {
        var scripts: [APNsChannelID: [Step]] = [:]
        var sent: [APNsChannelID] = []
        var held = 0
        var shutDown = false
    }

    let state = WaitableState(State())

    func script(_ channel: APNsChannelID, _ steps: [Step]) { state.update { $0.scripts[channel] = steps } }
    var sent: [APNsChannelID] { state.read(\.sent) }

    func manage(
        _ request: APNsChannelRequest, bundleID: APNsBundleID, endpoints: APNsBroadcastEndpoints,
        credentials: APNsCredentials, requestID: String?
    ) async -> APNsBroadcastResult {
        .failure(.shutdown)
    }

    func broadcast(
        _ request: APNsBroadcastRequest, bundleID: APNsBundleID, endpoints: APNsBroadcastEndpoints,
        credentials: APNsCredentials
    ) async -> APNsBroadcastResult {
        let step = state.update { state -> Step in
            state.sent.append(request.channelID)
            guard var steps = state.scripts[request.channelID], !steps.isEmpty else { return .answer(200, nil) }
            let step = steps.removeFirst()
            state.scripts[request.channelID] = steps
            if case .hold = step { state.held += 1 }
            return step
        }
        switch step {
        case .answer(let status, let reason): return .response(APNsBroadcastResponse(status: status, reason: reason))
        case .connectionLost:
            return .failure(.transport(APNsTransportError(kind: .connection, code: 7, message: "reset")))
        case .hold:
            await state.wait { $0.shutDown }
            return .failure(.shutdown)
        }
    }

    func shutdown() async { state.update { $0.shutDown = true } }
}
