import APNsClient
import BeamsModel
import Clocks
import ConfigModel
import Foundation
import InMemoryStore
import JSON
import JWTSigner
import Locking
import Logging
import Observability
import PushStore
import WebPush
import XCTest

@testable import PublishEngine

/// Waits until `condition` holds on `state`; a generous safety deadline fails the test instead of hanging it
/// (never a pause: the wait ends at the update that makes the condition true).
func waitForState<State: Sendable>(
    _ description: String, _ state: WaitableState<State>, file: StaticString = #filePath, line: UInt = #line,
    _ condition: @escaping @Sendable (State) -> Bool
) async {
    if await !state.wait(until: condition, deadline: .now + .seconds(30)) {
        XCTFail("timed out waiting for: \(description)", file: file, line: line)
    }
}

/// Records the webhooks the engine queues.
final class RecordingWebhooks: PublishWebhooks {
    enum Call: Sendable, Equatable {
        case started(publishID: String)
        case finished(publishID: String, accepted: Int64, failed: Int64)
        case usersAttempt(publishID: String, delivered: Set<String>, failed: Set<String>, noDevices: [String])
    }

    let calls = WaitableState<[Call]>([])

    func publishStarted(url: String, instanceID: String, publishID: String, requestBody: JSONValue) async {
        calls.update { $0.append(.started(publishID: publishID)) }
    }

    func publishFinished(url: String, status: PublishStatus, requestBody: JSONValue) async {
        calls.update {
            $0.append(.finished(publishID: status.publishID, accepted: status.accepted, failed: status.failed))
        }
    }

    func publishToUsersAttempt(
        instance: InstanceConfig, publishID: String, requested: [String],
        delivered: Set<String>, failed: Set<String>, seen: Set<String>
    ) async {
        calls.update {
            $0.append(
                .usersAttempt(
                    publishID: publishID, delivered: delivered, failed: failed,
                    noDevices: requested.filter { !seen.contains($0) }))
        }
    }
}

extension [ScriptedStore.Event] {
    /// The greatest cursor a checkpoint wrote.
    var cursor: Int64? {
        compactMap { if case .checkpointed(let cursor, _, _) = $0 { cursor } else { nil } }.max()
    }

    /// Device results written by successful checkpoints.
    var checkpointedResults: Int {
        reduce(0) { sum, event in if case .checkpointed(_, let results, _) = event { sum + results } else { sum } }
    }

    var claimAttempts: Int { count { $0 == .claimAttempted } }
    var claims: Int { count { if case .claimed = $0 { true } else { false } } }
    var finishedCount: Int { count { if case .finished = $0 { true } else { false } } }
    var checkpointFailures: Int { count { if case .checkpointFailed = $0 { true } else { false } } }
    var leaseLossSeen: Bool {
        contains {
            switch $0 {
            case .checkpointFailed(leaseLost: true), .renewFailed(leaseLost: true): true
            default: false
            }
        }
    }
}

/// One instance, devices in a shared in-memory store, publishes queued as the publish API queues them, and
/// engines (nodes) over it.
final class EngineFixture: @unchecked Sendable {
    // @unchecked Sendable: set up once in the test before any engine runs, read-only afterwards.
    let instanceID = "6f0f1a8e-2f5b-4c9e-8a51-0c7f3e2d9b14"
    /// Devices registered a minute ago: a delivery result is always later than the registration (the store keeps a
    /// device that registered again at or after a bad-token result).
    let base = InMemoryPushStore(clock: { Date().addingTimeInterval(-60) })
    let webhooks = RecordingWebhooks()
    let metrics = Metrics()
    var credentials: APNsCredentials? = APNsCredentials(
        teamID: "TEAM123456", keyID: "KEY1234567", key: UnusedSigningKey())
    var instanceWebhook: WebhookConfig? = WebhookConfig(url: "https://hooks.example/users", secret: "s")
    /// The instance's FCM and Web Push senders; nil: the instance has no `fcm`/`web` configuration.
    var fcmSender: FakeFCMSender?
    var webSender: FakeWebPushSender?
    private(set) var tokens: [String] = []

    var instanceConfig: InstanceConfig {
        InstanceConfig(
            id: instanceID, secretKey: "secret",
            apns: APNsInstanceConfig(
                teamID: "TEAM123456", keyID: "KEY1234567", keyPath: "/unused.p8",
                topic: "com.example.app", defaultEnvironment: .production),
            webhook: instanceWebhook)
    }

    static func token(_ index: Int) -> String { String(format: "%064x", index) }

    /// A device token of `platform`: APNs hex, an FCM registration token, or a web subscription in the canonical
    /// form the device API stores (endpoint `https://push.example/sub/<index>`, a fresh P-256 key).
    static func token(_ index: Int, platform: Platform) throws -> String {
        switch platform {
        case .apns: return token(index)
        case .fcm: return "fcm-token-\(index):APA91b"
        case .hms: return "hms-token-\(index)"
        case .web, .unifiedpush:
            let key = try P256KeyPair.generate()
            return JSONValue.object([
                "endpoint": .string(webEndpoint(index)),
                "keys": .object([
                    "auth": .string(Base64URL.encode(Array(repeating: UInt8(index & 0xFF), count: 16))),
                    "p256dh": .string(Base64URL.encode(key.publicPoint)),
                ]),
            ]).jsonText
        }
    }

    static func webEndpoint(_ index: Int) -> String { "https://push.example/sub/\(index)" }

    /// Registers devices `range` (token `token(i)`) following `interest`, optionally bound to `user`.
    @discardableResult
    func addDevices(
        _ range: ClosedRange<Int>, interest: String? = "news", user: String? = nil,
        environment: PushEnvironment = .production, declared: Bool = true,
        platform: Platform = .apns
    ) async throws -> [String] {
        var added: [String] = []
        for index in range {
            let token = try Self.token(index, platform: platform)
            var registration = DeviceRegistration(
                instanceID: instanceID, token: token, environment: environment, environmentDeclared: declared)
            registration.platform = platform
            let registered = try await base.registerDevice(registration)
            if let interest {
                _ = try await base.setInterests(
                    instanceID: instanceID, deviceID: registered.device.id, interests: [interest])
            }
            if let user {
                _ = try await base.setUser(
                    instanceID: instanceID, deviceID: registered.device.id, userID: user,
                    maxDevicesPerUser: 100)
            }
            added.append(token)
        }
        tokens += added
        return added
    }

    static func plan(apnsPayload: String? = #"{"aps":{"alert":"hi"}}"#, platforms: [String] = ["apns"]) -> Data {
        var object: [String: JSONValue] = [
            "v": .int(PublishPlan.version), "platforms": .array(platforms.map(JSONValue.string)),
            "requestBody": .object(["interests": .array([.string("news")])]),
        ]
        if let apnsPayload { object["apnsPayload"] = .string(apnsPayload) }
        return Data(JSONValue.object(object).serialized())
    }

    /// A plan built as the publish API builds it, from a Beams body (all three platforms by default).
    static func mixedPlan(
        _ body: String =
            #"{"interests":["news"],"apns":{"aps":{"alert":"hi"}},"fcm":{"notification":{"title":"hi"}},"web":{"notification":{"title":"hi"}}}"#
    ) throws -> Data {
        let request = try PublishRequest.parse(Array(body.utf8), kind: .interests)
        return try PublishPlan(
            request: request, body: Array(body.utf8), instanceID: "6f0f1a8e-2f5b-4c9e-8a51-0c7f3e2d9b14",
            publishID: "pub"
        ).encoded()
    }

    /// Queues a publish. - Returns: the job as the engine will see it.
    @discardableResult
    func enqueue(
        _ publishID: String, kind: PublishKind = .interests, targets: [String] = ["news"],
        payload: Data = EngineFixture.plan(), webhookURL: String? = "https://hooks.example/publish"
    )
        async throws -> PublishJob
    {
        let job = PublishJob(
            instanceID: instanceID, publishID: publishID, kind: kind, targets: targets,
            payload: payload, webhookURL: webhookURL, createdAt: Date())
        _ = try await base.enqueuePublish(job)
        return job
    }

    /// Every target of `job` by token, with its ref.
    func refs(_ job: PublishJob) async throws -> [String: Int64] {
        let page = try await base.targets(for: job, after: 0, limit: 100_000)
        return Dictionary(uniqueKeysWithValues: page.targets.map { ($0.token, $0.ref) })
    }

    func status(_ publishID: String) async throws -> PublishStatus? {
        try await base.publishStatus(instanceID: instanceID, publishID: publishID)
    }

    func device(_ token: String, platform: Platform = .apns) async throws -> Device? {
        try await base.device(instanceID: instanceID, platform: platform, token: token)
    }

    /// Settings that make every step an event: a checkpoint per answer, no periodic poll (tests wake the engine),
    /// store retries at once.
    static func settings(workerID: String = "node-a") -> PublishEngine.Settings {
        var settings = PublishEngine.Settings()
        settings.workerID = workerID
        settings.checkpointBatch = 1
        settings.checkpointInterval = .seconds(3600)
        settings.pollInterval = .seconds(3600)
        settings.storeRetryInterval = .milliseconds(1)
        settings.gracePeriod = .zero
        return settings
    }

    func makeEngine(
        store: ScriptedStore, sender: FakeSender, settings: PublishEngine.Settings = EngineFixture.settings()
    )
        -> PublishEngine
    {
        PublishEngine(
            store: store, apns: sender,
            instances: [
                InstanceRuntime(
                    config: instanceConfig, credentials: credentials, fcm: fcmSender,
                    web: webSender)
            ],
            settings: settings, metrics: metrics, logger: Logger(label: "engine-test", level: .critical),
            webhooks: webhooks)
    }
}

extension EngineFixture {
    /// Runs a second node (worker `node-b`, sending through `sender`) over the same data until it finished one
    /// publish, then stops it. `clockOffset` (seconds) puts its clock past the lease a first node still holds.
    func finishOnSecondNode(
        sender: FakeSender = FakeSender(), clockOffset: TimeInterval = 3600, file: StaticString = #filePath,
        line: UInt = #line
    ) async {
        await runToFinish(
            ScriptedStore(base, clockOffset: clockOffset), sender: sender, settings: Self.settings(workerID: "node-b"),
            file: file, line: line)
    }

    /// Runs an engine over `store` until it finished one publish, then stops it.
    func runToFinish(
        _ store: ScriptedStore, sender: FakeSender = FakeSender(),
        settings: PublishEngine.Settings = EngineFixture.settings(), file: StaticString = #filePath,
        line: UInt = #line
    ) async {
        let node = RunningEngine(makeEngine(store: store, sender: sender, settings: settings))
        await store.waitFor("finished", file: file, line: line) { $0.finishedCount == 1 }
        await node.stop()
    }
}

/// An engine running in its own task, as the service group runs it; `stop()` cancels it and waits for the drain.
struct RunningEngine {
    let engine: PublishEngine
    let task: Task<Void, Never>

    init(_ engine: PublishEngine) {
        self.engine = engine
        task = Task { await engine.run() }
    }

    func stop() async {
        task.cancel()
        await task.value
    }
}
