import Foundation
import HTTPServer
import JSON
import Logging
import PushStore

/// The Beams publish API (docs/BEAMS-PROTOCOL.md §2) plus, beyond Beams, publish status and recent publishes.
struct PublishAPI: Sendable {
    let app: AppContext

    func register(into router: inout Router) {
        let base = "/publish_api/v1/instances/:instance/publishes"
        router.post("\(base)/interests", bodyLimit: .beams(maxKiB: 10)) { try await publish($0, .interests) }
        // Legacy alias still called by the Go, Ruby and server-Swift SDKs.
        router.post(base, bodyLimit: .beams(maxKiB: 10)) { try await publish($0, .interests) }
        router.post("\(base)/users", bodyLimit: .beams(maxKiB: 200)) { try await publish($0, .users) }
        router.get("\(base)/:publish", bodyLimit: .noBody) { try await status($0) }
        router.get(base, bodyLimit: .noBody) { try await recent($0) }
    }

    func publish(_ request: HTTPRequest, _ kind: PublishKind) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try app.authorizeSecret(request, instance)
        try app.checkRateLimit(instance)
        try app.requireJSONContentType(request)
        let parsed = try PublishRequest.parse(request.body, kind: kind)
        let publishID = "pubid-" + UUID().uuidString.lowercased()
        let plan = try PublishPlan(request: parsed, body: request.body, instanceID: instance.id, publishID: publishID)
        let job = PublishJob(instanceID: instance.id, publishID: publishID, kind: kind, targets: parsed.targets,
                             payload: plan.encoded(), webhookURL: parsed.webhookURL, createdAt: app.now())
        // The answer waits for the commit: an acknowledged publish survives a crash.
        _ = try await app.publishQueue.enqueuePublish(job)
        app.publishEnqueued()
        app.metrics.increment("push_publishes_total", ["kind": kind.rawValue])
        app.logger.info("Publish accepted", [
            "publish": publishID, "kind": kind.rawValue, "targets": String(parsed.targets.count),
            "request": request.requestID,
        ])
        return .json(.object(["publishId": .string(publishID)]))
    }

    func status(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try app.authorizeSecret(request, instance)
        let publishID = request.parameters["publish"] ?? ""
        guard let status = try await app.publishQueue.publishStatus(instanceID: instance.id, publishID: publishID) else {
            throw BeamsError(404, "Publish not found", "Could not find the publish")
        }
        return .json(Self.render(status, now: app.now()))
    }

    func recent(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try app.authorizeSecret(request, instance)
        var limit = 20
        if let text = request.queryValue("limit") {
            guard let value = Int(text), (1...200).contains(value) else {
                throw BeamsError(400, "Bad request", "`limit` must be a number between 1 and 200")
            }
            limit = value
        }
        let list = try await app.publishQueue.recentPublishes(instanceID: instance.id, limit: limit)
        return .json(.object(["publishes": .array(list.map { Self.render($0, now: app.now()) })]))
    }

    /// FCM's or Web Push's counts in the status document (APNs keeps its original `apns` object).
    static func platformCounts(_ status: PublishStatus, _ platform: Platform) -> JSONValue {
        .object([
            "accepted": .int(Int(status.accepted(on: platform))),
            "failed": .int(Int(status.failed(on: platform))),
            "failedByReason": .object(status.failedByReason(on: platform).mapValues { .int(Int($0)) }),
            "devicesRemoved": .int(Int(status.counters[PublishCounter.devicesRemoved(on: platform)] ?? 0)),
        ])
    }

    /// The status document: state, counts by outcome and platform, and timing.
    static func render(_ status: PublishStatus, now: Date) -> JSONValue {
        let failed = status.failedByReason
        var object: [String: JSONValue] = [
            "publishId": .string(status.publishID),
            "kind": .string(status.kind.rawValue),
            "status": .string(status.state.rawValue),
            "attempts": .int(status.attempts),
            "createdAt": .string(status.createdAt.iso8601),
            "targets": .int(Int(status.targetsTotal ?? status.counters[PublishCounter.targets] ?? 0)),
            "apns": .object([
                "accepted": .int(Int(status.accepted)),
                "failed": .int(Int(status.failed)),
                "failedByReason": .object(failed.mapValues { .int(Int($0)) }),
                "environmentRetries": .int(Int(status.counters[PublishCounter.environmentRetries] ?? 0)),
            ]),
            "devicesRemoved": .int(Int(status.counters[PublishCounter.devicesRemoved] ?? 0)),
            "fcm": platformCounts(status, .fcm),
            "web": platformCounts(status, .web),
            "reports": .object(["delivered": .int(status.delivered), "opened": .int(status.opened)]),
        ]
        if let started = status.startedAt {
            object["startedAt"] = .string(started.iso8601)
            let end = status.finishedAt ?? now
            object["durationMs"] = .int(Int(saturating: (end.timeIntervalSince(started) * 1000).rounded()))
        }
        if let finished = status.finishedAt { object["finishedAt"] = .string(finished.iso8601) }
        if let summary = status.summary { object["summary"] = .string(summary) }
        return .object(object)
    }
}
