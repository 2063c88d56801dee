import BeamsModel
import ConfigModel
import Foundation
import HTTPServer
import JSON
import JWTSigner
import Locking
import Logging
import Observability
import PublishEngine
import PushStore
import Tracing

/// What every API handler shares. Immutable after start-up (the served instances change through `directory`,
/// which hands out whole snapshots), so handlers on any task can read it freely.
package final class AppContext: Sendable {
    package let config: ServerConfig
    /// The instances served now, config-file and run-time ones, by lower-cased id (instance ids are UUIDs;
    /// clients differ in case). Every look-up goes through it.
    let directory: InstanceDirectory
    /// Keeps `directory` equal to the config file's instances plus the store's (the admin API refreshes it after
    /// each change; `Application` runs it as a service on every node).
    let instanceSync: InstanceSync
    /// Every role of the store, for the wiring; handlers use the narrow role they need (below).
    package let store: any PushStorage
    package let metrics: Metrics
    package let logger: Logger
    /// Per-client and per-instance limits (see AppContext+Limits.swift).
    let limiters: Limiters
    /// The wall clock (injectable for tests).
    let now: @Sendable () -> Date
    /// Tells the publish engine a job is waiting, so it does not wait for its next poll.
    let publishEnqueued: @Sendable () -> Void
    /// Hands the plan intake built for a committed job to this node's engine (`PlanHandoff`), before
    /// `publishEnqueued`.
    let keepPlan: @Sendable (PublishPlan, PublishJob) -> Void
    /// Stops a cancelled publish's run on this node (`PublishEngine.cancel`); returns once it hands nothing more
    /// to a sender. - Returns: whether a run was stopped here.
    let cancelRun: @Sendable (PublishJobID) async -> Bool
    /// Tells the Beams bridge a forward is waiting (a device to retire; a publish's forward comes with
    /// `publishEnqueued`).
    let beamsForwardQueued: @Sendable () -> Void
    /// Every instance's keys and Beams secrets, read from the store at most once a second (KeyRing.swift).
    package let keys: KeyRing
    /// Starts the publish request's spans (`Tracer.disabled` unless `tracing` is on).
    let tracer: Tracer

    package convenience init(
        config: ServerConfig, store: any PushStorage, metrics: Metrics, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }, publishEnqueued: @escaping @Sendable () -> Void = {},
        cancelRun: @escaping @Sendable (PublishJobID) async -> Bool = { _ in false },
        liveNodes: Locked<Int> = Locked(1), beamsForwardQueued: @escaping @Sendable () -> Void = {},
        tracer: Tracer = .disabled, keepPlan: @escaping @Sendable (PublishPlan, PublishJob) -> Void = { _, _ in }
    ) {
        self.init(
            config: config, store: store, metrics: metrics, logger: logger, now: now,
            publishEnqueued: publishEnqueued, cancelRun: cancelRun, liveNodes: liveNodes,
            beamsForwardQueued: beamsForwardQueued, tracer: tracer, instanceSync: nil, keepPlan: keepPlan)
    }

    /// - Parameter instanceSync: what keeps the served instances current; nil: one of its own over `store`, never
    ///   run as a service (the admin API refreshes it after each change).
    init(
        config: ServerConfig, store: any PushStorage, metrics: Metrics, logger: Logger,
        now: @escaping @Sendable () -> Date, publishEnqueued: @escaping @Sendable () -> Void,
        cancelRun: @escaping @Sendable (PublishJobID) async -> Bool,
        liveNodes: Locked<Int>, beamsForwardQueued: @escaping @Sendable () -> Void,
        tracer: Tracer, instanceSync: InstanceSync?,
        keepPlan: @escaping @Sendable (PublishPlan, PublishJob) -> Void = { _, _ in }
    ) {
        self.keepPlan = keepPlan
        self.config = config
        // SHA-256 of a text cannot fail short of a broken OpenSSL; then rolling the Beams secret is refused.
        let seal = config.keys.encryptionKey.flatMap { try? SecretSeal(deriving: $0) }
        let sync =
            instanceSync
            ?? InstanceSync(
                store: store, directory: InstanceDirectory(configs: config.instances), seal: seal, senders: nil,
                providerTokens: nil, policy: config.webhooks.policy, environment: ProcessInfo.processInfo.environment,
                validateKey: { APNsKeyCheck.problem($0) }, configInstances: config.instances,
                // Unfingerprinted, as the directory's entries: a refresh keeps them (this sync builds no senders).
                fingerprints: [:], logger: logger.named("instances"), metrics: metrics,
                pollInterval: .seconds(1))
        self.instanceSync = sync
        self.directory = sync.directory
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.limiters = Limiters(config.limits, liveNodes: liveNodes)
        self.now = now
        self.publishEnqueued = publishEnqueued
        self.cancelRun = cancelRun
        self.beamsForwardQueued = beamsForwardQueued
        self.keys = KeyRing(store: store, seal: seal, logger: logger, now: now)
        self.tracer = tracer
    }

    /// What `instance`'s publishes may ask for in `x_delivery`.
    func deliveryLimits(_ instance: InstanceConfig) -> DeliveryOptions.Limits {
        DeliveryOptions.Limits(
            maxScheduleDays: config.engine.maxScheduleDays,
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
        guard let id = request.parameters["instance"], let instance = directory.config(id) else {
            throw .instanceNotFound
        }
        return instance
    }

    /// Checks `Authorization: Bearer …` against the instance's keys (docs/SECURITY.md, "API keys"): its Beams
    /// secrets (the config file's, or the stored ones after a roll) and its scoped keys (`psk_…`, looked up by id,
    /// digests compared in constant time), and that the key holds `scope`. An address that sent
    /// `limits.authFailuresPerIP` wrong keys within the window is locked out: its requests get 429 without the key
    /// being compared, so guessing stops while other addresses (the real backend) keep working.
    /// - Returns: who the request authenticated as.
    /// - Throws: 400 when the header is missing; 401 for an unknown, wrong, expired, revoked or not-yet-valid key;
    ///   403 naming `scope` for a valid key without it; 429 when locked out; 503 when the keys cannot be read.
    @discardableResult
    func authorize(_ request: HTTPRequest, _ instance: InstanceConfig, _ scope: APIKeyScope) async throws(BeamsError)
        -> Credential
    {
        let client = try admitClient(request)
        let snapshot: KeyRing.Snapshot
        do {
            snapshot = try await keys.snapshot(instance)
        } catch {
            logger.warning(
                "Keys cannot be read: request refused", ["instance": instance.id, "error": error.underlying])
            throw storeUnavailable
        }
        return try settle(request, instance, scope, snapshot, client: client)
    }

    /// The 503 of a request the store could not serve (keys, audit, instances), with the `Retry-After` every store
    /// outage answer carries (`StoreHealth.response`): a key snapshot read during an outage once answered without it.
    var storeUnavailable: BeamsError { .storeUnavailable(retryAfter: config.storage.outageRetryAfterSeconds) }

    /// `authorize` for an admission check, which runs before the body is read and cannot wait for the store: it
    /// judges against the keys last read. Without any (the store was never read), it lets the request in and the
    /// handler's `authorize` decides.
    func admit(_ request: HTTPRequest, _ instance: InstanceConfig, _ scope: APIKeyScope) throws(BeamsError) {
        let client = try admitClient(request)
        guard let snapshot = keys.heldSnapshot(instance) else { return }
        try settle(request, instance, scope, snapshot, client: client)
    }

    /// The header is present and the address is not locked out. - Returns: the address's limiter key.
    private func admitClient(_ request: HTTPRequest) throws(BeamsError) -> String {
        guard let header = request.headers.first("authorization"), !header.isEmpty else { throw .missingAuthorization }
        let client = limiters.clientKey(request)
        if case .limited(let retryAfter) = limiters.authFailures?.check(client) {
            metrics.increment(.rateLimited, ["limit": "auth"])
            throw .tooManyAuthFailures(retryAfter: retryAfter)
        }
        return client
    }

    @discardableResult
    private func settle(
        _ request: HTTPRequest, _ instance: InstanceConfig, _ scope: APIKeyScope, _ snapshot: KeyRing.Snapshot,
        client: String
    ) throws(BeamsError) -> Credential {
        let presented = BearerToken.parse(request.headers.first("authorization") ?? "")
        let verdict =
            presented.map {
                KeyVerdict.judge(
                    $0, required: scope, keys: snapshot.keys, beamsSecrets: snapshot.beamsSecrets,
                    beamsScopes: instance.beamsSecretScopes, now: now())
            } ?? .unknown
        switch verdict {
        case .allowed(let credential):
            if let id = credential.keyID { keys.noteUse(instance, keyID: id) }
            return credential
        case .missingScope(let missing):
            throw .missingScope(missing)
        case .unknown, .revoked, .expired, .notYetValid:
            switch limiters.authFailures?.recordFailure(client) {
            case .limited?:
                logger.warning(
                    "Address locked out after repeated wrong secret keys",
                    ["client": client, "instance": instance.id, "request": request.requestID])
            case .untracked?:
                metrics.increment(.rateLimitUntracked)
            case .allowed?, nil:
                break
            }
            throw .rejectedKey(verdict, scoped: presented.map(ScopedKeyText.looksScoped) ?? false)
        }
    }

    /// The user id of the Beams user token in `Authorization`, signed with any Beams secret the instance accepts
    /// now: after a roll, tokens signed with the old secret keep binding until its overlap ends.
    /// - Throws: as `BeamsUserToken.verify` with the current secret; 503 when the keys cannot be read.
    func verifyUserToken(_ request: HTTPRequest, _ instance: InstanceConfig) async throws(BeamsError) -> String {
        let secrets: [AcceptedBeamsSecret]
        do {
            secrets = try await keys.beamsSecrets(instance)
        } catch {
            throw storeUnavailable
        }
        let authorization = request.headers.first("authorization")
        let now = Int(self.now().timeIntervalSince1970)
        var firstError: BeamsError?
        for accepted in secrets {
            do {
                return try BeamsUserToken.verify(
                    authorization: authorization, instanceID: instance.id,
                    secret: accepted.secret, now: now)
            } catch {
                firstError = firstError ?? error
            }
        }
        throw firstError ?? BeamsError(401, "Unauthorized", "Invalid JWT: signature is invalid")
    }

    /// The secret-key APIs' rate limit (Beams: 100 requests per second per instance). - Throws: 429.
    func checkRateLimit(_ instance: InstanceConfig) throws(BeamsError) {
        try limit(
            limiters.secretAPI, instance.id.lowercased(), cost: limiters.instanceCost(limiters.secretAPI),
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
        let media = type.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard media == "application/json" else { throw .invalidContentType }
    }
}

extension HTTPResponse {
    /// 200 with an empty body (`Content-Length: 0`), what Beams answers for mutations.
    static var emptyOK: HTTPResponse { HTTPResponse(status: .ok) }
}
