import APNsClient
import HTTPServer
import PushStore

/// `/health` (alive), `/ready` (able to do its job) and `/metrics` (Prometheus text format).
struct OpsAPI: Sendable {
    let app: AppContext
    let instances: [InstanceRuntime]
    let apns: APNsClient
    let apnsHealth: APNsHealth

    func register(into router: inout Router) {
        router.get("/health") { _ in
            .json(.object(["status": .string("ok"), "version": .string(CLI.version)]))
        }
        router.get("/ready") { _ in try await ready() }
        router.get("/metrics") { _ in
            var response = HTTPResponse.text(app.metrics.render())
            response.headers.replaceOrAdd("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            return response
        }
    }

    /// 200 when the store answers; 503 otherwise, saying why. Instances without credentials and an unreachable APNs
    /// are reported but do not fail readiness: the server still accepts and queues work, which is what a load
    /// balancer's readiness decides.
    func ready() async throws -> HTTPResponse {
        var checks: [String: JSONValue] = [:]
        var ready = true
        do {
            let depth = try await app.store.queueDepth()
            checks["store"] = .object(["ok": .bool(true), "queueDepth": .int(depth)])
        } catch {
            ready = false
            checks["store"] = .object(["ok": .bool(false), "error": .string("\(error)")])
        }
        var list: [JSONValue] = []
        for instance in instances {
            list.append(.object([
                "id": .string(instance.config.id),
                "apnsCredentials": .string(instance.credentials == nil ? "not configured" : "loaded"),
            ]))
        }
        checks["instances"] = .array(list)
        checks["apns"] = apnsHealth.snapshot.json(apns.stats())
        let body = JSONValue.object(["ready": .bool(ready), "checks": .object(checks)])
        return .json(body, status: ready ? .ok : .serviceUnavailable)
    }
}
