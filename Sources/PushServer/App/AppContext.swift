import Foundation
import HTTPServer
import JSON
import Locking
import Logging
import PushStore
import Tracing

/// What every API handler shares. Immutable after start-up, so handlers on any task can read it freely.
public final class AppContext: Sendable {
    public let config: ServerConfig
    /// Instances by lower-cased id (instance ids are UUIDs; clients differ in case).
    let instances: [String: InstanceConfig]
    /// Every role of the store, for the wiring; handlers use the narrow role they need (below).
    public let store: any PushStorage
    public let metrics: Metrics
    public let logger: Logger
    /// Per-client and per-instance limits (see AppContext+Limits.swift).
    let limiters: Limiters
    /// The wall clock (injectable for tests).
    let now: @Sendable () -> Date
    /// Tells the publish engine a job is waiting, so it does not wait for its next poll.
    let publishEnqueued: @Sendable () -> Void
    /// Stops a cancelled publish's run on this node (`PublishEngine.cancel`); returns once it hands nothing more
    /// to a sender. - Returns: whether a run was stopped here.
    let cancelRun: @Sendable (PublishJobID) async -> Bool
    /// Tells the Beams bridge a forward is waiting (a device to retire; a publish's forward comes with
    /// `publishEnqueued`).
    let beamsForwardQueued: @Sendable () -> Void
    /// Starts the publish request's spans (`Tracer.disabled` unless `tracing` is on).
    let tracer: Tracer

    public init(
        config: ServerConfig, store: any PushStorage, metrics: Metrics, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }, publishEnqueued: @escaping @Sendable () -> Void = {},
        cancelRun: @escaping @Sendable (PublishJobID) async -> Bool = { _ in false },
        liveNodes: Locked<Int> = Locked(1), beamsForwardQueued: @escaping @Sendable () -> Void = {},
        tracer: Tracer = .disabled
    ) {
        self.config = config
        var byID: [String: InstanceConfig] = [:]
        for instance in config.instances { byID[instance.id.lowercased()] = instance }
        self.instances = byID
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.limiters = Limiters(config.limits, liveNodes: liveNodes)
        self.now = now
        self.publishEnqueued = publishEnqueued
        self.cancelRun = cancelRun
        self.beamsForwardQueued = beamsForwardQueued
        self.tracer = tracer
    }

    /// What `instance`'s publishes may ask for in `x_delivery`.
    func deliveryLimits(_ instance: InstanceConfig) -> DeliveryOptions.Limits {
        DeliveryOptions.Limits(maxScheduleDays: config.engine.maxScheduleDays,
                               defaultTimeZone: instance.delivery.defaultTimeZone,
                               defaultThrottlePerMinute: instance.delivery.defaultThrottlePerMinute,
                               maxThrottlePerMinute: instance.delivery.maxThrottlePerMinute)
    }

    /// The device APIs' role of the store: devices, interests, users.
    var deviceRegistry: any DeviceRegistry { store }
    /// The publish APIs' role of the store: queueing publishes and reading their status.
    var publishQueue: any PublishQueue { store }
    /// The Reporting API's role of the store: events and the facts they are checked against.
    var eventStore: any EventStore { store }
    /// The Beams bridge's outbox, when the backend has one (SQLite and PostgreSQL).
    var beamsForwards: (any BeamsForwardQueue)? { store as? any BeamsForwardQueue }

    /// The instance named by the route's `:instance`. - Throws: 404 "Could not find the instance".
    func instance(_ request: HTTPRequest) throws(BeamsError) -> InstanceConfig {
        guard let id = request.parameters["instance"], let instance = instances[id.lowercased()] else {
            throw .instanceNotFound
        }
        return instance
    }

    /// Checks `Authorization: Bearer <secret>` in constant time. An address that sent `limits.authFailuresPerIP`
    /// wrong keys within the window is locked out: its requests get 429 without the key being compared, so guessing
    /// stops while other addresses (the real backend) keep working.
    /// - Throws: 400 when the header is missing, 401 when it is wrong (Beams' statuses), 429 when locked out.
    func authorizeSecret(_ request: HTTPRequest, _ instance: InstanceConfig) throws(BeamsError) {
        guard let header = request.headers.first("authorization"), !header.isEmpty else { throw .missingAuthorization }
        let client = limiters.clientKey(request)
        if case .limited(let retryAfter) = limiters.authFailures?.check(client) {
            metrics.increment(.rateLimited, ["limit": "auth"])
            throw .tooManyAuthFailures(retryAfter: retryAfter)
        }
        guard let presented = BearerToken.parse(header), ConstantTime.equals(presented, instance.secretKey) else {
            switch limiters.authFailures?.recordFailure(client) {
            case .limited?:
                logger.warning("Address locked out after repeated wrong secret keys",
                               ["client": client, "instance": instance.id, "request": request.requestID])
            case .untracked?:
                metrics.increment(.rateLimitUntracked)
            case .allowed?, nil:
                break
            }
            throw .incorrectSecret
        }
    }

    /// The secret-key APIs' rate limit (Beams: 100 requests per second per instance). - Throws: 429.
    func checkRateLimit(_ instance: InstanceConfig) throws(BeamsError) {
        try limit(limiters.secretAPI, instance.id.lowercased(), cost: limiters.instanceCost(limiters.secretAPI),
                  label: "instance")
    }

    /// A JSON-object body. - Throws: 400 "Failed to read body as a JSON object".
    func jsonObject(_ request: HTTPRequest) throws(BeamsError) -> [String: JSONValue] {
        guard let object = JSONValue.parse(request.body)?.objectValue else { throw .invalidJSON }
        return object
    }

    /// Beams only takes JSON; a request that declares another media type gets 400. On the secret-key APIs one
    /// without a `Content-Type` is read as JSON, as curl users often forget the header; the anonymous APIs pass
    /// `missingAllowed: false`, because a browser sends a cross-origin `text/plain` or typeless body without a
    /// preflight, while every Beams client SDK labels its bodies `application/json` (docs/SECURITY.md).
    func requireJSONContentType(_ request: HTTPRequest, missingAllowed: Bool = true) throws(BeamsError) {
        guard let type = request.headers.first("content-type") else {
            if missingAllowed { return }
            throw .invalidContentType
        }
        let media = type.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard media == "application/json" else { throw .invalidContentType }
    }
}

extension HTTPResponse {
    /// 200 with an empty body (`Content-Length: 0`), what Beams answers for mutations.
    static var emptyOK: HTTPResponse { HTTPResponse(status: .ok) }
}

extension Date {
    /// RFC 3339 UTC, for API responses.
    var iso8601: String { LogFormat.timestamp(self) }
}
