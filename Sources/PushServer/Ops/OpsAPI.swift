import APNsClient
import Foundation
import HTTPServer
import JSON
import Logging
import Observability
import PublishEngine
import PushStore

/// `/health` (alive), `/ready` (able to do its job) and `/metrics` (Prometheus text format).
///
/// `/health` and `/ready`'s status code are public; `/metrics` and `/ready`'s details only go to the operator
/// (see `OpsAccess`).
struct OpsAPI: Sendable {
    let app: AppContext
    /// The instances served now.
    let directory: InstanceDirectory
    /// Their senders, in the directory's listing order (the config file's first, in file order).
    var instances: [InstanceRuntime] { directory.runtimes }
    let apns: APNsClient
    let apnsHealth: APNsHealth
    let storeHealth: StoreHealth
    let access: OpsAccess
    /// True once the server started stopping: `/ready` then answers 503, so a load balancer sends no new work
    /// while the rest drains (the ops listener is stopped last).
    var draining: @Sendable () -> Bool = { false }
    /// The nodes sharing the database, listed in `/ready`'s details; nil on a store only this node uses.
    var nodes: SharedNodes?
    /// Wall time, for certificate expiry (a calendar date); tests inject a movable one.
    var now: @Sendable () -> Date = { Date() }

    static let metricsForbidden = HTTPError(
        .forbidden, title: "Forbidden", detail: "Metrics are only served to the operator")
    static let tokenRequired = HTTPError(
        .unauthorized, title: "Unauthorized", detail: "Missing or incorrect operator token")

    /// Registers the routes as served on `listener`.
    func register(into router: inout Router, on listener: OpsAccess.Listener) {
        // Built once and answered on the event loop: a liveness probe costs no task and no encoding.
        let health = HTTPResponse.json(
            .object([
                "status": .string("ok"), "version": .string(BuildInfo.version),
                "commit": .string(BuildInfo.commit),
            ]))
        // None of them takes a body: one is refused (413) when the head arrives, never read or buffered.
        let noBody = BodyLimit(maxBytes: 0)
        router.add(.get, "/health", bodyLimit: noBody, onEventLoop: { _ in health })
        router.get("/ready", bodyLimit: noBody) { request in
            try await ready(detailed: decide(request, listener) == .allowed)
        }
        router.get("/metrics", bodyLimit: noBody) { request in
            switch decide(request, listener) {
            case .allowed:
                var response = HTTPResponse.text(app.metrics.render())
                response.headers.replaceOrAdd("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                return response
            case .tokenRequired:
                var response = HTTPResponse(error: Self.tokenRequired)
                response.headers.add("WWW-Authenticate", "Bearer")
                return response
            case .notServedHere:
                throw Self.metricsForbidden
            }
        }
    }

    /// A store failure as `/ready` names it: the outage reason (`unreachable`, `diskFull`, …), else the error.
    private static func storeErrorReason(_ error: any Error) -> JSONValue {
        .string(StoreUnavailableError(error).map { $0.reason.rawValue } ?? "\(error)")
    }

    private func decide(_ request: HTTPRequest, _ listener: OpsAccess.Listener) -> OpsAccess.Decision {
        let forwarded = OpsAccess.forwardingHeaders.contains { request.headers.first($0) != nil }
        return access.decide(
            authorization: request.headers.first("authorization"), peer: request.peer,
            forwarded: forwarded, on: listener)
    }

    /// 200 when the store answers and can write and the server is not stopping; 503 otherwise. Only `{"ready": …}`
    /// unless `detailed`, which adds why, per-instance credentials for every platform (FCM and Web Push ones
    /// `refused` with the problem, see `PlatformHealth`) and APNs reachability. Instances without credentials,
    /// refused credentials and an unreachable APNs are reported but do not fail readiness: the server still accepts
    /// and queues work, which is what a load balancer's readiness decides. An expired APNs client certificate does
    /// (`APNsCertificateHealth`): it cannot be refused by chance, and nothing of its instance will be delivered
    /// until an operator replaces it. On a shared database the details also list the live nodes (`SharedNodes`).
    func ready(detailed: Bool) async throws -> HTTPResponse {
        var checks: [String: JSONValue] = [:]
        let store = storeHealth.snapshot
        var ready = store.writable
        var storeCheck: [String: JSONValue] = [
            "writable": .bool(store.writable),
            "failingSince": store.failingSince.map { .string($0.iso8601) } ?? .null,
            "lastFailure": store.lastFailure.map { .string($0.reason.rawValue) } ?? .null,
            "failures": .int(store.failures),
        ]
        do {
            storeCheck["queueDepth"] = .int(try await app.publishQueue.queueDepth())
        } catch {
            ready = false
            storeCheck["error"] = Self.storeErrorReason(error)
        }
        storeCheck["ok"] = .bool(ready)
        let stopping = draining()
        if stopping { ready = false }
        // An expired APNs certificate fails readiness: APNs refuses it, so every delivery of its instance would fail.
        let now = self.now()
        let unusableCertificates = instances.filter { instance in
            APNsCertificateHealth.certificate(instance).map { !APNsCertificateHealth.usable($0, now: now) } ?? false
        }
        if !unusableCertificates.isEmpty { ready = false }
        guard detailed else {
            return .json(.object(["ready": .bool(ready)]), status: ready ? .ok : .serviceUnavailable)
        }
        checks["store"] = .object(storeCheck)
        checks["draining"] = .bool(stopping)
        checks["apnsCertificatesUsable"] = .bool(unusableCertificates.isEmpty)
        var list: [JSONValue] = []
        for instance in instances {
            let certificate = APNsCertificateHealth.certificate(instance)
            let apnsCredentials =
                instance.credentials == nil
                ? "not configured"
                : certificate.map {
                    APNsCertificateHealth.usable($0, now: now) ? "certificate" : "certificate unusable"
                }
                    ?? "loaded"
            list.append(
                .object([
                    "id": .string(instance.config.id),
                    "apnsCredentials": .string(apnsCredentials),
                    "apnsCertificate": APNsCertificateHealth.json(instance, now: now),
                    "fcmCredentials": .string(PlatformHealth.fcmCredentials(instance)),
                    "webCredentials": .string(PlatformHealth.webCredentials(instance)),
                    "fcm": PlatformHealth.fcm(instance),
                    "web": PlatformHealth.web(instance),
                    "unifiedpush": PlatformHealth.unifiedpush(instance),
                    "hmsCredentials": .string(PlatformHealth.hmsCredentials(instance)),
                    "hms": PlatformHealth.hms(instance),
                ]))
        }
        checks["instances"] = .array(list)
        checks["apns"] = apnsHealth.snapshot.json(apns.stats())
        if let nodes {
            // When the store did not answer the queue depth, a second query would only wait out another connect
            // timeout before failing the same way: the nodes are reported as unknown for the same reason.
            if let reason = storeCheck["error"] {
                checks["nodes"] = nodes.unavailable(reason: reason)
            } else {
                do {
                    checks["nodes"] = try await nodes.json(now: now)
                } catch {
                    checks["nodes"] = nodes.unavailable(reason: Self.storeErrorReason(error))
                }
            }
        }
        let body = JSONValue.object(["ready": .bool(ready), "checks": .object(checks)])
        return .json(body, status: ready ? .ok : .serviceUnavailable)
    }
}
