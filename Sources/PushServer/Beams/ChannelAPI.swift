import APNsClient
import BeamsModel
import ConfigModel
import Foundation
import HTTPServer
import JSON
import PublishEngine
import PushStore

/// Broadcast channels (iOS 18) beyond Beams (docs/API.md "Broadcast channels"): create, list, read and delete an
/// instance's channels through APNs' channel management API, and publish to channels. Secret-protected exactly like
/// the publish API.
///
/// Channel ids are standard base64 and may hold `/`, `+` and `=`: in a path they arrive percent-encoded (`%2F`,
/// `%2B`, `%3D`) or as base64url, and are checked strictly (`APNsChannelID`) before anything reaches APNs.
/// Management calls are answered synchronously; APNs refusing answers 502 with Apple's reason, APNs out of reach
/// 503, and an unknown channel 404.
struct ChannelAPI: Sendable {
    let app: AppContext
    /// The instances served now, with their senders.
    let instances: InstanceDirectory
    let broadcaster: any BroadcastSending

    init(app: AppContext, instances: InstanceDirectory, broadcaster: any BroadcastSending) {
        self.app = app
        self.broadcaster = broadcaster
        self.instances = instances
    }

    /// Publish ids of broadcast publishes start with this (their kind is the job's, `PublishKind.channels`; the
    /// schema's step that introduced that kind relabelled the older ones by this prefix).
    static let publishIDPrefix = "pubid-channels-"

    func register(into router: inout Router) {
        let base = "/publish_api/v1/instances/:instance/channels"
        router.post(base, bodyLimit: .beams(maxKiB: 1)) { try await create($0) }
        router.get(base, bodyLimit: .noBody) { try await list($0) }
        router.get("\(base)/:channel", bodyLimit: .noBody) { try await read($0) }
        router.delete("\(base)/:channel", bodyLimit: .noBody) { try await delete($0) }
        router.post("/publish_api/v1/instances/:instance/publishes/channels", bodyLimit: .beams(maxKiB: 64)) {
            try await publish($0)
        }
    }

    // MARK: Channel management

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, target) = try await authorize(request, .publish)
        try app.requireJSONContentType(request)
        let object = try app.jsonObject(request)
        for key in object.keys.sorted() where key != "messageStoragePolicy" {
            throw BeamsError.schema(String(key.prefix(64)), "Unknown member; allowed: messageStoragePolicy")
        }
        var policy = APNsMessageStoragePolicy.noMessageStored
        if let value = object["messageStoragePolicy"], !value.isNull {
            guard case .int(let int) = value, let parsed = APNsMessageStoragePolicy(rawValue: int) else {
                throw BeamsError.schema(
                    "messageStoragePolicy",
                    "messageStoragePolicy must be one of the following: 0 (no message stored), 1 (most recent message stored)"
                )
            }
            policy = parsed
        }
        let response = try await call(.create(policy), target, request)
        guard let id = response.createdChannel else {
            throw BeamsError(502, "Bad Gateway", "APNs created a channel but sent no valid apns-channel-id header")
        }
        app.logger.info(
            "Broadcast channel created",
            [
                "instance": instance.id, "channel": id.rawValue,
                "policy": String(policy.rawValue), "request": request.requestID,
            ])
        return .json(Self.render(id, policy: policy), status: .created)
    }

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (_, target) = try await authorize(request, .publishRead)
        let response = try await call(.list, target, request)
        guard let channels = response.channels else {
            throw BeamsError(502, "Bad Gateway", "APNs answered the channel list without a channels array")
        }
        return .json(.object(["channels": .array(channels.map { .string($0.rawValue) })]))
    }

    func read(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (_, target) = try await authorize(request, .publishRead)
        let id = try channelID(request)
        let response = try await call(.read(id), target, request)
        var object = Self.render(id, policy: nil).objectValue ?? [:]
        if let body = response.body?.objectValue {
            if let policy = body["message-storage-policy"]?.intValue { object["messageStoragePolicy"] = .int(policy) }
            if let pushType = body["push-type"]?.stringValue { object["pushType"] = .string(pushType) }
        }
        return .json(.object(object))
    }

    func delete(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, target) = try await authorize(request, .publish)
        let id = try channelID(request)
        _ = try await call(.delete(id), target, request)
        app.logger.info(
            "Broadcast channel deleted",
            [
                "instance": instance.id, "channel": id.rawValue,
                "request": request.requestID,
            ])
        return .empty(status: .noContent)
    }

    // MARK: Publishing

    /// `POST …/publishes/channels`: stored as a publish job before the answer, sent by the engine (`BroadcastFeeder`).
    func publish(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .publish)
        try app.checkRateLimit(instance)
        try app.requireJSONContentType(request)
        try Self.requireTokenAuthentication(instance)
        let maxChannels =
            instance.apns?.broadcast?.maxChannelsPerPublish ?? APNsBroadcastConfig.defaultMaxChannelsPerPublish
        let now = app.now()
        let parsed = try BroadcastPublishRequest.parse(
            request.body, timestamp: Int(now.timeIntervalSince1970.rounded(.down)),
            maxChannels: maxChannels)
        let publishID = Self.publishIDPrefix + UUID().uuidString.lowercased()
        let plan = PublishPlan(broadcast: BroadcastPlan(parsed), body: request.body)
        // A broadcast resolves no devices: the job has no targets, the plan carries the channels.
        let job = PublishJob(
            instanceID: instance.id, publishID: publishID, kind: .channels, targets: [],
            payload: plan.encoded(), createdAt: now)
        // The answer waits for the commit: an acknowledged publish survives a crash.
        _ = try await app.publishQueue.enqueuePublish(job)
        app.publishEnqueued()
        app.metrics.increment(.publishes, ["kind": "channels"])
        app.logger.info(
            "Broadcast publish accepted",
            [
                "publish": publishID, "channels": String(parsed.channels.count), "event": parsed.event.rawValue,
                "priority": String(parsed.priority), "request": request.requestID,
            ])
        return .json(.object(["publishId": .string(publishID)]))
    }

    // MARK: Helpers

    /// Where an instance's calls go.
    struct Target {
        var credentials: APNsCredentials
        var bundleID: APNsBundleID
        var endpoints: APNsBroadcastEndpoints
    }

    private func authorize(_ request: HTTPRequest, _ scope: APIKeyScope) async throws(BeamsError)
        -> (InstanceConfig, Target)
    {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, scope)
        try app.checkRateLimit(instance)
        try Self.requireTokenAuthentication(instance)
        guard let runtime = instances.runtime(instance.id), let credentials = runtime.credentials,
            let bundleID = runtime.broadcastBundleID, let endpoints = runtime.broadcastEndpoints
        else {
            throw BeamsError(
                409, "Conflict", "The instance has no APNs credentials: broadcast channels need its .p8 key and topic")
        }
        return (instance, Target(credentials: credentials, bundleID: bundleID, endpoints: endpoints))
    }

    /// Channel management and broadcasts are signed with the provider token (Apple shows no certificate variant for
    /// channel management), so a certificate instance gets a clear 409 instead of an upstream failure.
    private static func requireTokenAuthentication(_ instance: InstanceConfig) throws(BeamsError) {
        if instance.apns?.supportsTokenOnlyPushTypes == false {
            throw BeamsError(
                409, "Conflict",
                "Broadcast channels need token authentication (a .p8 key); this instance "
                    + "authenticates with a certificate")
        }
    }

    private func channelID(_ request: HTTPRequest) throws(BeamsError) -> APNsChannelID {
        guard let id = request.parameters["channel"].flatMap(APNsChannelID.init) else {
            throw BeamsError(
                400, "Bad request", "`channelId`: \(BroadcastChannelID.rule); percent-encode / + = in a path")
        }
        return id
    }

    /// One management call; a non-success answer becomes the error the caller sees.
    private func call(_ call: APNsChannelRequest, _ target: Target, _ request: HTTPRequest) async throws(BeamsError)
        -> APNsBroadcastResponse
    {
        let result = await broadcaster.manage(
            call, bundleID: target.bundleID, endpoints: target.endpoints,
            credentials: target.credentials, requestID: nil)
        switch result {
        case .response(let response) where response.status == call.successStatus:
            return response
        case .response(let response):
            let reason = response.reason ?? .unknown("HTTP\(response.status)")
            app.logger.notice(
                "APNs refused a channel call",
                [
                    "method": call.method, "status": String(response.status),
                    "reason": reason.rawValue, "request": request.requestID,
                ])
            if reason == .channelNotRegistered || (response.status == 404 && reason != .badPath) {
                throw BeamsError(404, "Channel not found", "APNs: \(reason.rawValue): \(reason.meaning)")
            }
            if response.status == 429 {
                throw BeamsError(429, "Rate Limited", "APNs: \(reason.rawValue): throttled; retry later", retryAfter: 1)
            }
            throw BeamsError(
                502, "Bad Gateway",
                "APNs refused the request (\(response.status) \(reason.rawValue)): \(reason.meaning)")
        case .failure(.transport(let error)):
            app.logger.warning(
                "APNs unreachable for a channel call", ["error": error.message, "request": request.requestID])
            throw BeamsError(
                503, "Service Unavailable",
                "APNs could not be reached (\(error.kind.rawValue)); nothing was changed. Retry later",
                retryAfter: 5)
        case .failure(.shutdown):
            throw BeamsError(503, "Service Unavailable", "The server is shutting down; retry later", retryAfter: 5)
        case .failure(.configuration(let fault)):
            throw BeamsError(502, "Bad Gateway", "APNs refused the instance's credentials: \(fault)")
        case .failure(.invalidRequest(let violation)):
            throw BeamsError(502, "Bad Gateway", "The channel call could not be built: \(violation)")
        }
    }

    static func render(_ id: APNsChannelID, policy: APNsMessageStoragePolicy?) -> JSONValue {
        var object: [String: JSONValue] = ["channelId": .string(id.rawValue), "channelIdUrlSafe": .string(id.urlSafe)]
        if let policy { object["messageStoragePolicy"] = .int(policy.rawValue) }
        return .object(object)
    }
}
