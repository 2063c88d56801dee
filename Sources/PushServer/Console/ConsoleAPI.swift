import APNsClient
import Foundation
import HTTPServer
import JSON
import Logging
import PushStore

/// The built-in web console (`console.enabled`): the page at `/console` and its two JSON endpoints, behind the
/// instance secret like every other admin call: an overview of the instance and a test push to one device token.
/// Everything else the page shows comes from the publish and device-health APIs a backend would use.
///
/// The page runs under `default-src 'self'` with no inline script or style, so a value that slips past its
/// `textContent` rendering still cannot execute; `frame-ancestors 'none'` keeps it out of other sites' frames.
struct ConsoleAPI: Sendable {
    let app: AppContext
    let instances: [String: InstanceRuntime]
    let apns: APNsClient
    let apnsHealth: APNsHealth
    let activity: DeliveryActivity
    let testPushLimiter: RateLimiter

    init(app: AppContext, instances: [InstanceRuntime], apns: APNsClient, apnsHealth: APNsHealth,
         activity: DeliveryActivity) {
        self.app = app
        self.instances = Dictionary(instances.map { ($0.config.id.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
        self.apns = apns
        self.apnsHealth = apnsHealth
        self.activity = activity
        // Keyed by configured instance id only (after the secret check), so the table never outgrows them.
        testPushLimiter = RateLimiter(perSecond: app.config.console.testPushesPerSecond,
                                      maxKeys: max(1, instances.count))
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
        let (config, runtime) = try await authorized(request)
        let now = app.now()
        let startOfDay = Self.startOfUTCDay(now)
        let statistics = try await app.store.statistics(instanceID: config.id, since: startOfDay)
        let queueDepth = try await app.store.queueDepth()
        let failed = PublishCounter.failures(in: statistics.counters)
        var byPlatform: [String: JSONValue] = [:]
        for (platform, count) in statistics.devicesByPlatform { byPlatform[platform.rawValue] = .int(count) }
        var byState: [String: JSONValue] = [:]
        for (state, count) in statistics.publishesByState { byState[state.rawValue] = .int(count) }
        let series = activity.series(instanceID: config.id, now: now).map { minute -> JSONValue in
            .object(["start": .string(minute.start.iso8601), "accepted": .int(minute.accepted),
                     "failed": .int(minute.failed)])
        }
        let body = JSONValue.object([
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
                "accepted": .int(Int(statistics.counters[PublishCounter.accepted] ?? 0)),
                "failed": .int(Int(failed.values.reduce(0, +))),
                "failedByReason": .object(failed.mapValues { .int(Int($0)) }),
                "devicesRemoved": .int(Int(statistics.counters[PublishCounter.devicesRemoved] ?? 0)),
                "byPlatform": .object(Dictionary(uniqueKeysWithValues: Platform.allCases.map { platform in
                    let failures = PublishCounter.failures(in: statistics.counters, on: platform)
                    return (platform.rawValue, JSONValue.object([
                        "accepted": .int(Int(statistics.counters[PublishCounter.accepted(on: platform)] ?? 0)),
                        "failed": .int(Int(failures.values.reduce(0, +))),
                        "failedByReason": .object(failures.mapValues { .int(Int($0)) }),
                    ]))
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

    /// Sends one notification to one token and answers with Apple's answer, field by field. Always 200 once the
    /// request was valid: the APNs status is in the body, not in this response's status.
    func testPush(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (config, runtime) = try await authorized(request)
        // A test push is a publish: the console scope signs in, the publish scope sends.
        try await app.authorize(request, config, .publish)
        try app.requireJSONContentType(request)
        let options = try Self.options(try app.jsonObject(request))
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
                fields["registeredAfterTimestamp"] = answer.timestamp.map { .bool(known.lastRegisteredAt > $0) } ?? .null
                card = .object(fields)
            }
            device = card
        }
        let prepared = try? APNsHeaderRules.prepare(plan.request)
        app.logger.info("Console test push", [
            "instance": config.id, "token": Redact.token(plan.request.deviceToken),
            "environment": plan.environment.rawValue, "status": answer.status.map(String.init) ?? "-",
            "reason": answer.reason ?? "-", "request": request.requestID,
        ])
        let body = JSONValue.object([
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

    /// The test-push body's fields. Unknown fields and wrong types are 422s naming the field.
    static func options(_ body: [String: JSONValue]) throws(BeamsError) -> TestPush.Options {
        let known: Set<String> = ["deviceToken", "environment", "alert", "payload", "pushType", "priority", "topic",
                                  "collapseId", "expiration"]
        if let unknown = body.keys.sorted().first(where: { !known.contains($0) }) {
            throw .schema(unknown, "Unknown field; expected one of \(known.sorted().joined(separator: ", "))")
        }
        func string(_ key: String) throws(BeamsError) -> String? {
            guard let value = body[key], !value.isNull else { return nil }
            guard let text = value.stringValue else { throw .schema(key, PublishRequest.typeMessage("string", value)) }
            return text
        }
        func integer(_ key: String) throws(BeamsError) -> Int? {
            guard let value = body[key], !value.isNull else { return nil }
            guard case .int(let number) = value else { throw .schema(key, PublishRequest.typeMessage("integer", value)) }
            return number
        }
        guard let token = try string("deviceToken") else { throw .schema("deviceToken", "deviceToken is required") }
        var payload: [UInt8]?
        if let value = body["payload"], !value.isNull {
            switch value {
            // Text is sent byte for byte (what the page's JSON editor holds); an object is re-serialized.
            case .string(let text): payload = Array(text.utf8)
            case .object: payload = value.serialized()
            default: throw .schema("payload", PublishRequest.typeMessage("object", value))
            }
        }
        return TestPush.Options(
            deviceToken: token, environment: try string("environment"), alert: try string("alert"), payload: payload,
            pushType: try string("pushType"), priority: try integer("priority"), topic: try string("topic"),
            collapseID: try string("collapseId"), expiration: try integer("expiration"))
    }

    private func authorized(_ request: HTTPRequest) async throws(BeamsError) -> (InstanceConfig, InstanceRuntime) {
        let config = try app.instance(request)
        try await app.authorize(request, config, .console)
        guard let runtime = instances[config.id.lowercased()] else { throw BeamsError.instanceNotFound }
        return (config, runtime)
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
