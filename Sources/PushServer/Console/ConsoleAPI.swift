import APNsClient
import BeamsModel
import Clocks
import ConfigModel
import FCMClient
import Foundation
import HTTPClient
import HTTPServer
import JSON
import Logging
import Observability
import PublishEngine
import PushStore
import WebPush

/// The built-in web console (`console.enabled`): the page at `/console` and its two JSON endpoints, behind the
/// instance secret like every other admin call: an overview of the instance and a test push to one device token.
/// Everything else the page shows comes from the publish and device-health APIs a backend would use.
///
/// The page runs under `default-src 'self'` with no inline script or style, so a value that slips past its
/// `textContent` rendering still cannot execute; `frame-ancestors 'none'` keeps it out of other sites' frames.
struct ConsoleAPI: Sendable {
    let app: AppContext
    /// The instances served now, with their senders.
    let instances: InstanceDirectory
    let apns: APNsClient
    let apnsHealth: APNsHealth
    let activity: DeliveryActivity
    /// The provider budgets, for what each let through in the last minute.
    let budgets: DeliveryBudgets?
    let testPushLimiter: RateLimiter

    init(
        app: AppContext, instances: InstanceDirectory, apns: APNsClient, apnsHealth: APNsHealth,
        activity: DeliveryActivity, budgets: DeliveryBudgets? = nil
    ) {
        self.app = app
        self.instances = instances
        self.apns = apns
        self.apnsHealth = apnsHealth
        self.activity = activity
        self.budgets = budgets
        // Keyed by served instance id only (after the secret check); room for instances created at run time.
        testPushLimiter = RateLimiter(
            perSecond: app.config.console.testPushesPerSecond,
            maxKeys: max(1024, instances.snapshot.entries.count))
    }

    /// The page's headers (docs/CONSOLE.md, "Security").
    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ]

    /// A test-push body is a token, a few header fields and one payload (4 KiB, 5 KiB for VoIP), escaped.
    static let testPushBody = BodyLimit.beams(maxKiB: 16)

    func register(into router: inout Router) {
        for path in ["/console", "/console/"] {
            router.get(path, bodyLimit: .noBody) { request in Self.asset(ConsoleAssets.index, request) }
        }
        router.get("/console/app.js", bodyLimit: .noBody) { request in Self.asset(ConsoleAssets.script, request) }
        router.get("/console/app.css", bodyLimit: .noBody) { request in Self.asset(ConsoleAssets.styles, request) }
        router.get("/favicon.ico", bodyLimit: .noBody) { request in Self.asset(ConsoleAssets.favicon, request) }
        let base = "/admin_api/v1/instances/:instance/console"
        router.get("\(base)/overview", bodyLimit: .noBody) { try await overview($0) }
        router.post("\(base)/test-push", bodyLimit: Self.testPushBody) { try await testPush($0) }
    }

    // MARK: Page

    /// Serves an embedded file with the page's headers. The HTML is never cached (it is the entry point); the
    /// other files are revalidated by ETag, so an upgraded server never runs an old script.
    static func asset(_ asset: ConsoleAssets.Asset, _ request: HTTPRequest) -> HTTPResponse {
        var headers = HTTPHeaders(securityHeaders)
        headers.add("Cache-Control", asset.contentType.hasPrefix("text/html") ? "no-store" : "no-cache")
        headers.add("ETag", asset.etag)
        if request.headers.first("if-none-match") == asset.etag {
            return HTTPResponse(status: HTTPStatus(304), headers: headers)
        }
        headers.add("Content-Type", asset.contentType)
        return HTTPResponse(status: .ok, headers: headers, body: asset.bytes)
    }

    // MARK: JSON endpoints

    /// The instance at a glance: devices, today's publishes and failures (per platform too), APNs, FCM and Web Push
    /// health, notifications per minute.
    func overview(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (config, runtime, credential) = try await authorized(request)
        let now = app.now()
        let startOfDay = Self.startOfUTCDay(now)
        let statistics = try await app.store.statistics(instanceID: config.id, since: startOfDay)
        let queueDepth = try await app.store.queueDepth()
        let failed = statistics.counters.failures(on: .apns)
        var byPlatform: [String: JSONValue] = [:]
        for (platform, count) in statistics.devicesByPlatform { byPlatform[platform.rawValue] = .int(count) }
        var byState: [String: JSONValue] = [:]
        for (state, count) in statistics.publishesByState { byState[state.rawValue] = .int(count) }
        let series = activity.series(instanceID: config.id, now: now).map { minute -> JSONValue in
            .object([
                "start": .string(minute.start.iso8601), "accepted": .int(minute.accepted),
                "failed": .int(minute.failed),
            ])
        }
        let body = JSONValue.object([
            // Who signed in: the page shows only the actions these scopes allow (the routes check them anyway).
            "session": .object([
                "keyId": credential.keyID.map { .string($0) } ?? .null,
                "beamsSecret": .bool(credential.isBeamsSecret),
                "scopes": .array(credential.scopes.map(\.rawValue).sorted().map { .string($0) }),
            ]),
            "instance": .object([
                "id": .string(config.id),
                "apnsCredentials": .string(runtime.credentials == nil ? "not configured" : "loaded"),
                "teamId": config.apns.map { .string($0.teamID) } ?? .null,
                "keyId": config.apns.map { .string($0.keyID) } ?? .null,
                "topic": config.apns.map { .string($0.topic) } ?? .null,
                "defaultEnvironment": .string((config.apns?.defaultEnvironment ?? .production).rawValue),
                "apnsCertificate": APNsCertificateHealth.json(runtime, now: now),
                "apnsHosts": .object([
                    "sandbox": .string(runtime.apnsEnvironment(.sandbox).baseURL),
                    "production": .string(runtime.apnsEnvironment(.production).baseURL),
                ]),
            ]),
            "devices": .object([
                "total": .int(statistics.devices),
                "byPlatform": .object(byPlatform),
                "invalid": .int(statistics.invalidDevices),
            ]),
            "today": .object([
                "since": .string(startOfDay.iso8601),
                "publishes": .int(statistics.publishes),
                "byState": .object(byState),
                "accepted": .int(Int(statistics.counters[.accepted(.apns)] ?? 0)),
                "failed": .int(Int(failed.values.reduce(0, +))),
                "failedByReason": .object(failed.mapValues { .int(Int($0)) }),
                "devicesRemoved": .int(Int(statistics.counters[.devicesRemoved] ?? 0)),
                "byPlatform": .object(
                    Dictionary(
                        uniqueKeysWithValues: Platform.allCases.map { platform in
                            let failures = statistics.counters.failures(on: platform)
                            return (
                                platform.rawValue,
                                JSONValue.object([
                                    "accepted": .int(Int(statistics.counters[.accepted(platform)] ?? 0)),
                                    "failed": .int(Int(failures.values.reduce(0, +))),
                                    "failedByReason": .object(failures.mapValues { .int(Int($0)) }),
                                ])
                            )
                        })),
            ]),
            "apns": apnsHealth.snapshot.json(apns.stats()),
            "fcm": PlatformHealth.fcm(runtime),
            "web": PlatformHealth.web(runtime),
            "unifiedpush": PlatformHealth.unifiedpush(runtime),
            "hms": PlatformHealth.hms(runtime),
            "store": .object(["ok": .bool(true), "queueDepth": .int(queueDepth)]),
            "perMinute": .array(series),
            "quotas": try await quotas(config, now: now),
            "limits": .object([
                "interestsPublishBytes": .int(10 * 1024),
                "usersPublishBytes": .int(200 * 1024),
                "testPushesPerSecond": .int(app.config.console.testPushesPerSecond),
            ]),
        ])
        return Self.noStore(.json(body))
    }

    /// Sends one notification to one device and answers with the provider's answer, field by field: APNs to any
    /// token (`TestPush`), the other platforms to a registered device through the instance's own sender
    /// (`PlatformTestPush`). Always 200 once the request was valid and sent: the provider's status is in the body,
    /// not in this response's status.
    func testPush(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (config, _, _) = try await authorized(request)
        // A test push is a publish: the console scope signs in, the publish scope sends.
        try await app.authorize(request, config, .publish)
        // Held as a publish run holds it: a change or delete of the instance meanwhile retires these senders, which
        // then close when this push has its answer, not under it.
        guard let runtime = instances.hold(config.id) else { throw BeamsError.instanceNotFound }
        defer { runtime.release() }
        try app.requireJSONContentType(request)
        let body = try app.jsonObject(request)
        let parsed = try TestPushRequest.parse(body)
        var known: Device?
        var platform = parsed.platform ?? .apns
        switch parsed.device {
        case .id(let id):
            guard let device = try await app.store.device(instanceID: config.id, id: id) else {
                throw BeamsError(404, "Device not found", "No device with this id is registered on this instance")
            }
            if let given = parsed.platform, given != device.platform {
                throw BeamsError.schema(
                    "platform", "the device is a \(device.platform.rawValue) device, not \(given.rawValue)")
            }
            platform = device.platform
            known = device
        case .token(let raw) where platform != .apns:
            let token: String
            switch platform {
            case .web, .unifiedpush:
                do {
                    token = try DeviceToken.subscriptionLookupKey(raw)
                } catch {
                    throw BeamsError.schema("deviceToken", error.detail)
                }
            default: token = raw
            }
            guard !token.isEmpty,
                let device = try await app.store.device(instanceID: config.id, platform: platform, token: token)
            else {
                throw BeamsError(
                    404, "Device not found",
                    "No \(platform.rawValue) device with this token is registered "
                        + "on this instance (a test push to \(platform.rawValue) goes to a registered device)")
            }
            known = device
        case .token:
            break
        }
        let content = try parsed.content(for: platform)
        if platform == .apns {
            var options = parsed.apns
            if let known {
                options.deviceToken = known.token
                // The device's own environment, unless the page names one.
                if options.environment == nil, known.environmentDeclared {
                    options.environment = known.environment.rawValue
                }
            }
            return try await apnsTestPush(request, config: config, runtime: runtime, options: options)
        }
        guard let device = known else { throw BeamsError.deviceNotFound }
        return try await platformTestPush(request, config: config, runtime: runtime, device: device, content: content)
    }

    /// A test push through APNs (`TestPush`): any token, registered or not; nothing is written to the store.
    private func apnsTestPush(
        _ request: HTTPRequest, config: InstanceConfig, runtime: InstanceRuntime,
        options: TestPush.Options
    ) async throws -> HTTPResponse {
        let plan: TestPush.Plan
        do {
            plan = try TestPush.plan(options, instance: runtime, ownTopicsOnly: true)
        } catch {
            throw BeamsError.schema(error.field, error.message)
        }
        // Counted only when an APNs request would follow: a refused body costs APNs nothing.
        try app.limit(testPushLimiter, config.id.lowercased(), label: "test_push")
        let (result, duration) = await TestPush.send(plan, with: apns)
        let answer = TestPush.Answer(result)
        apnsHealth.record(result)
        if result != .failure(.shutdown) {
            activity.record(instanceID: config.id, accepted: answer.status == 200, at: app.now())
        }
        let known = try await app.store.device(instanceID: config.id, platform: .apns, token: plan.request.deviceToken)
        var device: JSONValue = .null
        if let known {
            var card = try await AdminAPI(app: app).render(known, withInterests: false)
            if case .object(var fields) = card {
                // Apple's rule for a 410: the token is dead only if it was not registered again after `timestamp`.
                fields["registeredAfterTimestamp"] =
                    answer.timestamp.map { .bool(known.lastRegisteredAt > $0) } ?? .null
                card = .object(fields)
            }
            device = card
        }
        let prepared = try? APNsHeaderRules.prepare(plan.request)
        app.logger.info(
            "Console test push",
            [
                "instance": config.id, "token": Redact.token(plan.request.deviceToken),
                "environment": plan.environment.rawValue, "status": answer.status.map(String.init) ?? "-",
                "reason": answer.reason ?? "-", "request": request.requestID,
            ])
        let body = JSONValue.object([
            "platform": .string(Platform.apns.rawValue),
            "environment": .string(plan.environment.rawValue),
            "apnsHost": .string(plan.apnsEnvironment.baseURL),
            "teamId": .string(plan.credentials.teamID),
            "keyId": .string(plan.credentials.keyID),
            "deviceToken": .string(plan.request.deviceToken),
            "topic": .string(prepared?.topic ?? plan.request.topic),
            "pushType": (prepared?.pushType ?? plan.request.pushType).map { .string($0.rawValue) } ?? .null,
            "priority": (prepared?.priority ?? plan.request.priority).map { .int($0.rawValue) } ?? .null,
            "payloadBytes": .int(plan.request.payload.count),
            "apnsIdSent": plan.request.apnsID.map(JSONValue.string) ?? .null,
            "answer": answer.json,
            "latencyMs": .int(Self.milliseconds(duration)),
            "device": device,
        ])
        return Self.noStore(.json(body))
    }

    /// The longest a test push waits for its provider, retries included (a retry due later ends `Expired`): the
    /// page waits for this answer, and FCM's backoff after `QUOTA_EXCEEDED` alone starts at a minute.
    static let testPushDeadline = 30.0

    /// A test push to a registered FCM, web, UnifiedPush or HMS device through the instance's sender of that
    /// platform. Its result is recorded as a publish's would be: the device's last result, and a dead token
    /// (`UNREGISTERED`, 404/410, Huawei's illegal token) invalidates the device with its invalidation record, which
    /// the invalidation webhook and feed then carry.
    private func platformTestPush(
        _ request: HTTPRequest, config: InstanceConfig, runtime: InstanceRuntime,
        device: Device, content: PlatformTestPush.Content
    ) async throws -> HTTPResponse {
        let platform = device.platform
        let (message, bytes) = try PlatformTestPush.message(content, platform: platform, instanceID: config.id)
        try Self.requireSender(platform, runtime)
        try app.limit(testPushLimiter, config.id.lowercased(), label: "test_push")
        let ref = try await app.store.deviceRef(instanceID: config.id, id: device.id)
        let deadline = Date().addingTimeInterval(Self.testPushDeadline)
        let started = MonotonicClock.now()
        var answer: PlatformTestPush.Answer
        var endpoint: String?
        switch message {
        case .fcm(let template):
            guard let sender = runtime.fcm else { throw Self.notConfigured(platform) }
            let fcmRequest = FCMRequest(token: device.token, message: template, deadline: RetryDeadline(at: deadline))
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<FCMResult, Never>) in
                Task { await sender.submit(fcmRequest) { continuation.resume(returning: $0) } }
            }
            answer = PlatformTestPush.answer(result)
        case .webPush(let webMessage):
            let isWeb = platform == .web
            guard let sender = isWeb ? runtime.web : runtime.unifiedpush else { throw Self.notConfigured(platform) }
            let cache = isWeb ? runtime.webSubscriptions : runtime.unifiedPushSubscriptions
            guard let subscription = cache?.subscription(device.token) ?? WebPushSubscriptions.parse(device.token)
            else {
                answer = PlatformTestPush.Answer(
                    reason: "InvalidSubscription",
                    failure: "the stored subscription does not parse; nothing was sent",
                    verdict: .failed("InvalidSubscription"))
                break
            }
            // As registered (the parsed URL's description is its origin only).
            endpoint = JSONValue.parse(Array(device.token.utf8))?["endpoint"]?.stringValue
            let notification = WebPushNotification(
                subscription: subscription, message: webMessage,
                deadline: RetryDeadline(at: deadline))
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<WebPushResult, Never>) in
                Task { await sender.submit(notification) { continuation.resume(returning: $0) } }
            }
            var verdict = isWeb ? DeliveryOutcome.verdict(result) : DeliveryOutcome.unifiedPushVerdict(result)
            // A publish counts unanswered deliveries towards removing the subscription; so does a test push.
            if let ref, let unreachable = isWeb ? runtime.unreachableWeb : runtime.unreachableUnifiedPush {
                verdict = unreachable.judge(verdict, device: ref, now: MonotonicClock.seconds())
            }
            answer = PlatformTestPush.answer(result, verdict: verdict)
        case .hms(let hmsMessage):
            guard let sender = runtime.hms else { throw Self.notConfigured(platform) }
            let sent = await sender.sendCounting(
                tokens: [device.token], message: hmsMessage, deadline: deadline,
                retries: nil)
            answer = PlatformTestPush.answer(
                sent.results[device.token] ?? .failed(reason: "UnknownError", status: 0),
                requests: sent.requests)
        }
        let duration = MonotonicClock.elapsed(since: started)
        let now = Date()
        if let ref {
            let target = Target(
                ref: ref, deviceID: device.id, platform: platform, token: device.token,
                environment: device.environment, environmentDeclared: device.environmentDeclared,
                lastRegisteredAt: device.lastRegisteredAt, userID: device.userID)
            if case .final(_, let result) = DeliveryOutcome(answer.verdict, on: platform, target: target, now: now) {
                try await app.store.recordDeviceResults([result])
                activity.record(instanceID: config.id, accepted: result.isAccepted, at: app.now())
            }
        }
        let after = try await app.store.device(instanceID: config.id, id: device.id)
        let removed = answer.removesDevice && after?.invalidatedAt != nil && device.invalidatedAt == nil
        var card: JSONValue = .null
        if let after { card = try await AdminAPI(app: app).render(after, withInterests: false) }
        app.logger.info(
            "Console test push",
            [
                "instance": config.id, "platform": platform.rawValue, "device": device.id,
                "status": answer.status.map(String.init) ?? "-", "reason": answer.reason ?? "-",
                "removed": removed ? "yes" : "no", "request": request.requestID,
            ])
        let token: JSONValue = platform == .fcm || platform == .hms ? .string(device.token) : .null
        let body = JSONValue.object([
            "platform": .string(platform.rawValue),
            "deviceId": .string(device.id),
            "deviceToken": token,
            "endpoint": endpoint.map(JSONValue.string) ?? .null,
            "payloadBytes": .int(bytes),
            "answer": answer.json,
            "deviceRemoved": .bool(removed),
            "latencyMs": .int(Self.milliseconds(duration)),
            "device": card,
        ])
        return Self.noStore(.json(body))
    }

    /// 422 when the instance has no sender for `platform` (nothing is sent, nothing counted against the limit).
    static func requireSender(_ platform: Platform, _ runtime: InstanceRuntime) throws(BeamsError) {
        let configured: Bool
        switch platform {
        case .apns: configured = runtime.credentials != nil
        case .fcm: configured = runtime.fcm != nil
        case .web: configured = runtime.web != nil
        case .unifiedpush: configured = runtime.unifiedpush != nil
        case .hms: configured = runtime.hms != nil
        }
        if !configured { throw notConfigured(platform) }
    }

    /// The answer for a platform the instance has no credentials for, naming the config section to add.
    static func notConfigured(_ platform: Platform) -> BeamsError {
        switch platform {
        case .apns:
            return BeamsError(
                422, "APNs not configured",
                "This instance has no APNs credentials "
                    + "(instances[].apns in the server config): nothing was sent")
        case .fcm:
            return BeamsError(
                422, "FCM not configured",
                "This instance has no FCM service account "
                    + "(instances[].fcm in the server config): nothing was sent")
        case .web:
            return BeamsError(
                422, "Web push not configured",
                "This instance has no VAPID key "
                    + "(instances[].web in the server config): nothing was sent")
        case .unifiedpush:
            return BeamsError(
                422, "UnifiedPush not configured",
                "This instance does not send "
                    + "UnifiedPush (instances[].unifiedpush in the server config): nothing was sent")
        case .hms:
            return BeamsError(
                422, "HMS not configured",
                "This instance has no Huawei Push Kit credentials "
                    + "(instances[].hms in the server config): nothing was sent")
        }
    }

    private func authorized(_ request: HTTPRequest) async throws(BeamsError)
        -> (InstanceConfig, InstanceRuntime, Credential)
    {
        let config = try app.instance(request)
        let credential = try await app.authorize(request, config, .console)
        guard let runtime = instances.runtime(config.id) else { throw BeamsError.instanceNotFound }
        return (config, runtime, credential)
    }

    /// Answers carrying instance data are never stored by the browser or a proxy.
    static func noStore(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers.replaceOrAdd("Cache-Control", "no-store")
        return response
    }

    static func startOfUTCDay(_ date: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar.startOfDay(for: date)
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(clamping: seconds) &* 1000 &+ Int(attoseconds / 1_000_000_000_000_000)
    }
}
