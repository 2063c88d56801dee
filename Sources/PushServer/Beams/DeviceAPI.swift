import BeamsModel
import ConfigModel
import Foundation
import HTTPClient
import HTTPServer
import JSON
import Logging
import PushStore
import WebPush

/// The Beams device API as the client SDKs use it (docs/BEAMS-PROTOCOL.md §4, docs/API.md): registration, token
/// refresh (Android), interests, metadata, the authenticated user, and the Web SDK's VAPID key. No credentials except
/// on `PUT …/user`; the device id acts as the capability. Browsers call it cross-origin, so every route answers
/// CORS preflights and carries `Access-Control-Allow-Origin` on every answer (`CORSPolicy`).
struct DeviceAPI: Sendable {
    let app: AppContext

    static let maxInterestsPerDevice = 5000
    /// A register body is a token (a web push subscription is up to 8 KiB) plus metadata (up to 4 KiB).
    static let registerBody = BodyLimit.beams(maxKiB: 16)
    /// Metadata is at most 4 KiB of JSON.
    static let metadataBody = BodyLimit.beams(maxKiB: 8)
    /// `{"timeZone": "America/Argentina/ComodRivadavia"}` and then some.
    static let timeZoneBody = BodyLimit.beams(maxKiB: 1)
    /// 5000 interests of up to 164 bytes, quoted and comma-separated, fit; a larger body of valid names has more
    /// than 5000, so it gets the same 400 as a counted set (a 413 would make the iOS SDK retry it forever).
    static let interestsBody = BodyLimit(
        maxBytes: 900 * 1024,
        error: HTTPError(
            .badRequest, title: BeamsError.tooManyInterests.title, detail: BeamsError.tooManyInterests.detail))
    /// A `PUT …/interests` costs one request per 10 array elements against the address's rate limit (at least the
    /// one its admission took), so that replacing 5000 interests again and again is as expensive as the writes it
    /// causes: each new name is a random insert into two indexes, about a page of WAL, where a registration is a few.
    /// At one per 100, eight addresses kept the store's writer busy with 5,000-name writes (docs/BENCHMARKS.md,
    /// noisy neighbour).
    static let interestsPerRequestCost = 10

    func register(into router: inout Router) {
        let instanceBase = "/device_api/v1/instances/:instance"
        let base = "\(instanceBase)/devices/:platform"
        let cors = CORSPolicy(instances: app.directory)
        let app = self.app
        router.add(
            .get, "\(instanceBase)/web-vapid-public-key", bodyLimit: .noBody,
            admission: { request throws(BeamsError) in
                try app.checkClientLimit(request)
                let instance = try app.instance(request)
                try CORSPolicy.checkOrigin(request, instance)
                try app.checkInstanceLimit(app.limiters.deviceAPI, instance)
            }, responseHook: cors.decorate, onEventLoop: { try vapidPublicKey($0) })
        route(&router, .post, base, Self.registerBody) { try await registerDevice($0) }
        route(&router, .put, "\(base)/:device/token", Self.registerBody) { try await putToken($0) }
        // Beyond Beams: a UnifiedPush distributor's NEW_ENDPOINT (endpoint and keys), the same handler.
        route(&router, .put, "\(base)/:device/endpoint", Self.registerBody) { try await putToken($0) }
        route(&router, .get, "\(base)/:device", .noBody) { try await getDevice($0) }
        route(&router, .delete, "\(base)/:device", .noBody) { try await deleteDevice($0) }
        route(&router, .put, "\(base)/:device/metadata", Self.metadataBody) { try await putMetadata($0) }
        route(&router, .put, "\(base)/:device/time-zone", Self.timeZoneBody) { try await putTimeZone($0) }
        route(&router, .get, "\(base)/:device/interests", .noBody) { try await getInterests($0) }
        route(&router, .put, "\(base)/:device/interests", Self.interestsBody) { try await putInterests($0) }
        route(&router, .post, "\(base)/:device/interests/:interest", .noBody) { try await addInterest($0) }
        route(&router, .delete, "\(base)/:device/interests/:interest", .noBody) { try await removeInterest($0) }
        route(&router, .put, "\(base)/:device/user", .noBody) { try await putUser($0) }
        // Beyond Beams: Live Activity tokens (LiveActivityAPI).
        let liveActivity = LiveActivityAPI(app: app)
        let liveActivityRoutes = LiveActivityAPI.routes(deviceBase: "\(base)/:device")
        for (method, pattern, limit, handler) in liveActivityRoutes {
            route(&router, method, pattern, limit) { try await handler(liveActivity, $0) }
        }
        cors.registerPreflights(Array(Set(liveActivityRoutes.map { $0.1 })).sorted(), into: &router)
        cors.registerPreflights(
            [
                "\(instanceBase)/web-vapid-public-key", base, "\(base)/:device", "\(base)/:device/token",
                "\(base)/:device/endpoint", "\(base)/:device/metadata", "\(base)/:device/time-zone",
                "\(base)/:device/interests", "\(base)/:device/interests/:interest",
                "\(base)/:device/user",
            ], into: &router)
    }

    /// Every device route is charged to the client's address first (even for an unknown instance), then checked
    /// against the instance's allowed origins and, when it takes a body, for `Content-Type: application/json`
    /// (`CORSPolicy.checkOrigin`, docs/SECURITY.md), then charged to the instance. All of it runs on the event loop
    /// when the head arrives (`HTTPAdmission`), so a refused request never costs a task or a body read.
    private func route(
        _ router: inout Router, _ method: HTTPMethod, _ pattern: String, _ limit: BodyLimit,
        _ handler: @escaping HTTPHandler
    ) {
        let app = self.app
        let takesBody = limit.maxBytes > 0
        router.add(
            method, pattern, bodyLimit: limit,
            admission: { request throws(BeamsError) in
                try app.checkClientLimit(request)
                let instance = try app.instance(request)
                try CORSPolicy.checkOrigin(request, instance)
                if takesBody { try app.requireJSONContentType(request, missingAllowed: false) }
                try app.checkInstanceLimit(app.limiters.deviceAPI, instance)
            }, responseHook: CORSPolicy(instances: app.directory).decorate, handler: handler)
    }

    // MARK: Handlers

    func registerDevice(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        let platform = try Self.platform(request)
        let body = try app.jsonObject(request)
        let token: String
        if platform == .unifiedpush {
            token = try await unifiedPushToken(body, instance)
        } else {
            guard let rawToken = body["token"]?.stringValue, !rawToken.isEmpty else {
                throw platform == .apns ? BeamsError.missingToken : BeamsError(400, "Bad request", "Missing token")
            }
            token = try Self.normalizedToken(rawToken, platform: platform, web: instance.web)
        }
        let bundleID = body["bundleIdentifier"]?.stringValue
        if platform == .apns && (bundleID ?? "").isEmpty { throw BeamsError.missingBundleID }
        let metadata = try DeviceMetadata.text(body["metadata"])

        var environment = instance.apns?.defaultEnvironment ?? .production
        var declared = false
        if let value = body["environment"], !value.isNull {
            guard let name = value.stringValue, let parsed = PushEnvironment(rawValue: name.lowercased()) else {
                throw BeamsError(400, "Bad request", "`environment` must be \"sandbox\" or \"production\"")
            }
            environment = parsed
            declared = true
        }
        let registration = DeviceRegistration(
            instanceID: instance.id, platform: platform, token: token, environment: environment,
            environmentDeclared: declared, bundleID: bundleID, metadata: metadata)
        let registered: RegisteredDevice
        // The tighter of the server's cap and the instance's quota; the answer names the one that refused.
        let cap = app.config.limits.maxDevicesPerInstance
        let quota = instance.quotas.devices.flatMap { $0 < cap ? $0 : nil }
        do {
            registered = try await app.deviceRegistry.registerDevice(registration, maxDevicesPerInstance: quota ?? cap)
        } catch PushStoreError.deviceLimitReached {
            if let quota {
                app.quotaRefused(instance, .devices)
                throw BeamsError.instanceDeviceQuota(quota)
            }
            app.metrics.increment(.deviceLimitRefusals)
            throw BeamsError.instanceDeviceLimit
        }
        app.metrics.increment(
            .deviceRegistrations,
            ["platform": platform.rawValue, "result": registered.created ? "created" : "updated"])
        app.logger.info(
            "Device registered",
            [
                "device": registered.device.id, "token": Redact.token(token), "platform": platform.rawValue,
                "environment": registered.device.environment.rawValue, "created": String(registered.created),
            ])
        await retireAtBeams(body["beamsDeviceId"], platform: platform, instance: instance, device: registered.device.id)
        return .json(
            .object([
                "id": .string(registered.device.id),
                "initialInterestSet": .array(registered.interests.map(JSONValue.string)),
            ]))
    }

    /// A Beams device id as the Beams SDKs make them (`apns-`, `fcm-` or `web-` and a UUID): letters, digits, `-`,
    /// `_`, `.`, `:`, 1 to 128 of them. Anything else is ignored (a 400 would stop the SDK registering at all).
    static func isBeamsDeviceID(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || "-_.:".utf8.contains($0)
            }
    }

    /// Beyond Beams (docs/MIGRATING.md): a registration carrying `beamsDeviceId`, the device's id at Pusher Beams
    /// (sent by a patched SDK, or by the app), queues the retirement of that Beams device when the instance's
    /// bridge is on with `retireDevices`, so that the phone is not reached by Beams and here both. Queued after the
    /// registration commits and once per Beams device (the outbox's key): an app that sends it at every launch
    /// costs one DELETE at Beams. A crash between the two leaves it to the next registration.
    func retireAtBeams(_ value: JSONValue?, platform: Platform, instance: InstanceConfig, device: String) async {
        guard let value, let beamsID = value.stringValue else { return }
        guard let bridge = instance.beamsBridge, bridge.enabled, bridge.retireDevices, let queue = app.beamsForwards,
            [.apns, .fcm, .web].contains(platform)
        else { return }
        guard Self.isBeamsDeviceID(beamsID) else {
            app.logger.notice("Ignored a malformed beamsDeviceId", ["device": device, "platform": platform.rawValue])
            return
        }
        let forward = BeamsForward(instanceID: instance.id, kind: .retireDevice, key: "\(platform.rawValue)/\(beamsID)")
        do {
            if try await queue.enqueueBeamsForward(forward, now: app.now()) {
                app.beamsForwardQueued()
                app.logger.info("Beams device retirement queued", ["device": device, "beamsDevice": beamsID])
            }
        } catch {
            app.logger.warning("Queuing a Beams device retirement failed", ["device": device, "error": "\(error)"])
        }
    }

    /// `PUT …/devices/{platform}/{id}/token` `{"token": new}`: the Android SDK's FCM token refresh. 404 for an
    /// unknown device makes the SDK register again and replay the refresh (docs/API.md).
    func putToken(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        let platform = try Self.platform(request)
        // `…/endpoint` is UnifiedPush's name for the refresh; the other platforms have `…/token` only.
        if request.path.hasSuffix("/endpoint") && platform != .unifiedpush {
            throw BeamsError(404, "Not found", "`endpoint` updates are for unifiedpush devices; use …/token")
        }
        let body = try app.jsonObject(request)
        let token: String
        if platform == .unifiedpush {
            token = try await unifiedPushToken(body, instance)
        } else {
            guard let rawToken = body["token"]?.stringValue, !rawToken.isEmpty else {
                throw BeamsError(400, "Bad request", "Missing token")
            }
            token = try Self.normalizedToken(rawToken, platform: platform, web: instance.web)
        }
        let updated: Bool
        do {
            updated = try await app.deviceRegistry.updateToken(
                instanceID: instance.id, deviceID: id, platform: platform, token: token)
        } catch PushStoreError.tokenHeldByAnotherUser {
            // 400: the Android SDK drops the refresh job instead of retrying it forever; the phone stays reachable
            // through the device that holds the token.
            app.metrics.increment(.deviceTokenConflicts, ["platform": platform.rawValue])
            app.logger.warning(
                "Token refresh refused: the token belongs to a device bound to another user",
                ["device": id, "token": Redact.token(token), "platform": platform.rawValue])
            throw BeamsError.tokenHeldByAnotherUser
        }
        guard updated else { throw BeamsError.deviceNotFound }
        app.metrics.increment(.deviceTokenUpdates, ["platform": platform.rawValue])
        app.logger.info(
            "Device token updated", ["device": id, "token": Redact.token(token), "platform": platform.rawValue])
        return .emptyOK
    }

    /// A UnifiedPush subscription from a register or endpoint body (`DeviceToken.unifiedPush`), its host resolved
    /// once and every address judged by the instance's address rules (the webhooks' SSRF rules, docs/SECURITY.md):
    /// an endpoint on a loopback, private, link-local, CGNAT, unique-local or mapped address, in any spelling, is
    /// refused before anything is stored. Sending judges the address of every socket again.
    func unifiedPushToken(_ body: [String: JSONValue], _ instance: InstanceConfig) async throws(BeamsError) -> String {
        guard let settings = instance.unifiedpush else { throw BeamsError.unifiedPushNotConfigured }
        let (token, url) = try DeviceToken.unifiedPush(body, ports: settings.ports)
        let policy = DestinationPolicy(allowances: settings.allowedDestinations)
        let host = url.host.hasPrefix("[") ? String(url.host.dropFirst().dropLast()) : url.host
        let addresses: [IPAddress]
        switch await HostResolver.resolve(host) {
        case .success(let found): addresses = found
        case .failure(.busy):
            // Not the endpoint's fault: the app retries a 503 (docs/API.md).
            var error = BeamsError(503, "Service Unavailable", "Too many endpoint look-ups at once; retry shortly")
            error.retryAfter = 1
            throw error
        case .failure(let failure): throw BeamsError.invalidUnifiedPushEndpoint("the endpoint's host \(failure)")
        }
        for address in addresses {
            if case .refused(let range) = policy.verdict(for: address, host: url.host) {
                throw BeamsError.invalidUnifiedPushEndpoint(
                    "the endpoint's host resolves to \(address), which is \(range) (unifiedpush.allowedDestinations)")
            }
        }
        return token
    }

    /// `GET …/web-vapid-public-key`: the instance's VAPID public key (base64url of the 65-byte point), which the
    /// Web SDK passes to `pushManager.subscribe`. Answered from memory on the event loop.
    func vapidPublicKey(_ request: HTTPRequest) throws(BeamsError) -> HTTPResponse {
        let instance = try app.instance(request)
        guard let web = instance.web else { throw BeamsError.webNotConfigured }
        return .json(.object(["vapidPublicKey": .string(web.keyPair.publicKeyBase64URL)]))
    }

    func getDevice(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        guard let device = try await app.deviceRegistry.device(instanceID: instance.id, id: id) else {
            throw BeamsError.deviceNotFound
        }
        var object: [String: JSONValue] = [
            "id": .string(device.id),
            "userId": .string(device.userID ?? ""),
            "metadata": device.metadataJSON,
        ]
        if let zone = device.timeZone { object["timeZone"] = .string(zone) }
        return .json(.object(object))
    }

    /// `PUT …/devices/{platform}/{id}/time-zone` `{"timeZone": "Europe/Paris"}` (beyond Beams; `null` clears it):
    /// the zone `deliverAtLocalTime` publishes use for this device. Apart from the metadata on purpose: the Beams
    /// SDKs replace the whole metadata object when they update it, which would drop the zone.
    func putTimeZone(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        let body = try app.jsonObject(request)
        if let unknown = body.keys.sorted().first(where: { $0 != "timeZone" }) {
            throw BeamsError(
                400, "Bad request", "Unknown member `\(unknown.prefix(64))`: the body is {\"timeZone\": name}")
        }
        var zone: String?
        switch body["timeZone"] {
        case nil:
            throw BeamsError(400, "Bad request", "`timeZone` is required (null clears it)")
        case .null?:
            zone = nil
        case .string(let name)?:
            if let problem = TimeZoneName.problem(name) {
                throw BeamsError(400, "Bad request", "`timeZone` \(problem)")
            }
            zone = name
        case let other?:
            throw BeamsError(400, "Bad request", "`timeZone` must be a string or null, got \(other.typeName)")
        }
        guard try await app.deviceRegistry.updateTimeZone(instanceID: instance.id, deviceID: id, timeZone: zone) else {
            throw BeamsError.deviceNotFound
        }
        return .emptyOK
    }

    func deleteDevice(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        // Deleting an unknown device succeeds: the SDK retries deletes forever, and the end state is the same.
        if try await app.deviceRegistry.deleteDevice(instanceID: instance.id, id: id) {
            app.logger.info("Device deleted", ["device": id])
        }
        return .emptyOK
    }

    func putMetadata(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        let metadata = try DeviceMetadata.text(.object(try app.jsonObject(request)))
        guard try await app.deviceRegistry.updateMetadata(instanceID: instance.id, deviceID: id, metadata: metadata)
        else {
            throw BeamsError.deviceNotFound
        }
        return .emptyOK
    }

    func getInterests(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        var limit = 100
        if let text = request.queryValue("limit") {
            guard let value = Int(text), (1...100).contains(value) else {
                throw BeamsError(400, "Bad request", "`limit` must be a number between 1 and 100")
            }
            limit = value
        }
        // The cursor is the last interest name of the previous page, so anything else cannot have come from us.
        let cursor = request.queryValue("cursor").flatMap { $0.isEmpty ? nil : $0 }
        if let cursor, !InterestName.isValid(cursor) {
            throw BeamsError(400, "Bad request", "`cursor` is not valid: pass the `nextCursor` of the previous page")
        }
        guard
            let page = try await app.deviceRegistry.interests(
                instanceID: instance.id, deviceID: id, limit: limit, cursor: cursor)
        else { throw BeamsError.deviceNotFound }
        return .json(
            .object([
                "interests": .array(page.interests.map(JSONValue.string)),
                "responseMetadata": .object(["nextCursor": page.nextCursor.map(JSONValue.string) ?? .null]),
            ]))
    }

    /// `PUT …/interests` `{"interests": [...]}`: replaces the device's set. What a request costs follows what it
    /// sends, not what it stores: the array is refused at its 5001st element, before the rest is parsed; every
    /// element received (duplicates included) is charged before any is validated; the writer sees each name once.
    func putInterests(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        let body = try Self.interestsBodyObject(request.body)
        guard let list = body["interests"]?.arrayValue else {
            throw BeamsError(400, "Bad request", "`interests` must be an array of interest names")
        }
        try app.checkClientLimit(
            request, cost: Self.interestsCost(elements: list.count, burst: app.config.limits.ipBurst))
        try app.checkClientInterestLimit(request, names: list.count)
        var names: [String] = []
        names.reserveCapacity(list.count)
        var seen = Set<String>(minimumCapacity: list.count)
        for element in list {
            guard let name = element.stringValue, InterestName.isValid(name) else {
                throw BeamsError.invalidInterest(element.stringValue ?? element.jsonText)
            }
            if seen.insert(name).inserted { names.append(name) }
        }
        let written = try await capped {
            try await app.deviceRegistry.setInterests(
                instanceID: instance.id, deviceID: id, interests: names,
                limits: app.config.limits.interestLimits)
        }
        guard written else { throw BeamsError.deviceNotFound }
        return .emptyOK
    }

    /// Runs an interest write, answering the store's per-instance caps with their 400s (and counting them).
    private func capped(_ write: () async throws -> Bool) async throws -> Bool {
        do {
            return try await write()
        } catch PushStoreError.subscriptionLimitReached {
            app.metrics.increment(.interestLimitRefusals, ["limit": "subscriptions"])
            throw BeamsError.instanceSubscriptionLimit
        } catch PushStoreError.interestLimitReached {
            app.metrics.increment(.interestLimitRefusals, ["limit": "interests"])
            throw BeamsError.instanceInterestLimit
        }
    }

    /// The `PUT …/interests` body as an object, parsed with no array longer than the per-device cap: a longer one
    /// is refused where its surplus starts. - Throws: `tooManyInterests` for a longer array, `invalidJSON` else.
    static func interestsBodyObject(_ body: [UInt8]) throws(BeamsError) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: body, limits: JSONLimits(maxArrayCount: maxInterestsPerDevice))
        } catch {
            throw error.kind == .arrayTooLong ? .tooManyInterests : .invalidJSON
        }
        guard let object = value.objectValue else { throw .invalidJSON }
        return object
    }

    /// Rate tokens a `PUT …/interests` with `elements` array elements costs beyond the one its admission took: one
    /// per `interestsPerRequestCost` elements as received, fractions included (a duplicate costs as much as a name),
    /// but never more than the address's `burst` in all, so the largest valid `PUT` always fits a full bucket (an
    /// SDK answered 429 retries, and one that could never pass would retry forever).
    static func interestsCost(elements: Int, burst: Int) -> Double {
        max(0, min(Double(elements) / Double(interestsPerRequestCost), Double(max(1, burst))) - 1)
    }

    func addInterest(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        let interest = try Self.interest(request)
        try app.checkClientInterestLimit(request, names: 1)
        // The 5000 cap holds for single adds too. Not atomic with the insert: two concurrent adds at 4999 may both
        // pass, which only the device's own (serialised) SDK could do.
        guard
            let current = try await app.deviceRegistry.interests(
                instanceID: instance.id, deviceID: id, limit: Self.maxInterestsPerDevice, cursor: nil)
        else { throw BeamsError.deviceNotFound }
        if current.interests.count >= Self.maxInterestsPerDevice && !current.interests.contains(interest) {
            throw BeamsError.tooManyInterests
        }
        let written = try await capped {
            try await app.deviceRegistry.addInterest(
                instanceID: instance.id, deviceID: id, interest: interest,
                limits: app.config.limits.interestLimits)
        }
        guard written else { throw BeamsError.deviceNotFound }
        return .emptyOK
    }

    func removeInterest(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        let interest = try Self.interest(request)
        guard try await app.deviceRegistry.removeInterest(instanceID: instance.id, deviceID: id, interest: interest)
        else {
            throw BeamsError.deviceNotFound
        }
        return .emptyOK
    }

    func putUser(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, id) = try deviceRef(request)
        let userID = try await app.verifyUserToken(request, instance)
        let limit = app.config.limits.maxDevicesPerUser
        switch try await app.deviceRegistry.setUser(
            instanceID: instance.id, deviceID: id, userID: userID, maxDevicesPerUser: limit)
        {
        case .ok:
            app.logger.info("Device bound to user", ["device": id])
            return .emptyOK
        case .deviceNotFound:
            throw BeamsError.deviceNotFound
        case .differentUserAlreadySet:
            throw BeamsError.userAlreadySet
        case .userHasTooManyDevices:
            throw BeamsError.userDeviceLimit(limit)
        }
    }

    // MARK: Helpers

    private func deviceRef(_ request: HTTPRequest) throws(BeamsError) -> (InstanceConfig, String) {
        let instance = try app.instance(request)
        _ = try Self.platform(request)
        guard let id = request.parameters["device"], !id.isEmpty else {
            throw BeamsError(400, "Bad request", "Invalid device id")
        }
        return (instance, id)
    }

    static func platform(_ request: HTTPRequest) throws(BeamsError) -> Platform {
        guard let name = request.parameters["platform"], let platform = Platform(rawValue: name) else {
            throw BeamsError(404, "Not found", "Unknown platform: use apns, fcm, web, unifiedpush or hms")
        }
        return platform
    }

    static func interest(_ request: HTTPRequest) throws(BeamsError) -> String {
        let name = request.parameters["interest"] ?? ""
        guard InterestName.isValid(name) else { throw BeamsError.invalidInterest(name) }
        return name
    }

    /// The token in the form the store keys devices by (see `DeviceToken`); a web subscription's endpoint must be
    /// one the instance's Web Push sender would send to (`web`: its push-service hosts and address allowances).
    static func normalizedToken(_ token: String, platform: Platform, web: WebInstanceConfig? = nil) throws(BeamsError)
        -> String
    {
        try DeviceToken.normalized(
            token, platform: platform, pushServiceHosts: web?.pushServiceHosts ?? [],
            allowedDestinations: web?.allowedDestinations ?? [])
    }
}

extension Device {
    /// The stored metadata text as JSON (the API only ever stores objects; anything unreadable shows as `{}`).
    var metadataJSON: JSONValue { JSONValue.parse(Array(metadata.utf8)) ?? .object([:]) }
}
