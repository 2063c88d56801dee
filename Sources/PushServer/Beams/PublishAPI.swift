import BeamsModel
import ConfigModel
import Foundation
import HTTPServer
import JSON
import Logging
import PublishEngine
import PushStore
import Tracing

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
        router.delete("\(base)/:publish", bodyLimit: .noBody) { try await cancel($0) }
        router.get(base, bodyLimit: .noBody) { try await recent($0) }
    }

    func publish(_ request: HTTPRequest, _ audience: PublishRequest.Audience) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .publish)
        guard app.tracer.isEnabled else { return try await accept(request, audience, instance, trace: nil) }
        // Traced once the caller proved the instance's secret: only then does its `traceparent` become the parent
        // (an unauthenticated caller cannot attach spans to someone's trace).
        let parent = request.headers.first("traceparent").flatMap {
            TraceContext(traceparent: $0, tracestate: request.headers.first("tracestate"))
        }
        let span = app.tracer.startSpan(
            Self.spanName(request), kind: .server, parent: parent,
            attributes: [
                Attribute("http.request.method", request.method.rawValue),
                Attribute("http.route", Self.route(request.routePattern)),
                Attribute("url.path", request.path),
                Attribute("url.scheme", request.isTLS ? "https" : "http"),
                Attribute("client.address", request.clientAddress),
                Attribute("beams.instance_id", instance.id),
                Attribute("beams.publish_kind", audience.kind.rawValue),
            ])
        defer { span.end() }
        do {
            let response = try await TraceContext.$current.withValue(span.context) {
                try await accept(request, audience, instance, trace: span)
            }
            span.set("http.response.status_code", response.status.code)
            return response
        } catch {
            let status = (error as? BeamsError)?.statusCode ?? 500
            span.set("http.response.status_code", status)
            span.set("error.type", (error as? BeamsError)?.title ?? String(describing: type(of: error)))
            // A server span marks only 5xx as an error (semantic conventions, HTTP server spans).
            if status >= 500 { span.setStatus(.error, (error as? BeamsError)?.detail ?? "\(error)") }
            throw error
        }
    }

    /// `POST /publish_api/v1/instances/{instance}/publishes/interests`: the method and the route, never the raw path.
    static func spanName(_ request: HTTPRequest) -> String {
        "\(request.method.rawValue) \(route(request.routePattern))"
    }

    /// The router's pattern in the semantic conventions' form (`:instance` → `{instance}`).
    static func route(_ pattern: String) -> String {
        pattern.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
        }.joined(separator: "/")
    }

    /// Validates, plans and commits one publish; `trace` (the request's span, when tracing is on) is stored with
    /// the job so the node that runs it continues the trace.
    private func accept(
        _ request: HTTPRequest, _ audience: PublishRequest.Audience, _ instance: InstanceConfig,
        trace: Span?
    ) async throws -> HTTPResponse {
        let kind = audience.kind
        try app.checkRateLimit(instance)
        try app.requireJSONContentType(request)
        let publishID = Self.newPublishID()
        // With the Beams bridge on, the local publish and its copy to Beams share collapse ids (BeamsBridgeBody).
        let bridge = instance.beamsBridge.flatMap { $0.enabled && app.beamsForwards != nil ? $0 : nil }
        let body = bridge == nil ? request.body : BeamsBridgeBody.withCollapseIDs(request.body, publishID: publishID)
        let parsed = try PublishRequest.parse(body, kind: audience)
        let now = app.now()
        let delivery = try DeliveryOptions.resolve(
            member: parsed.deliveryMember,
            header: request.headers.first(DeliveryOptions.header), now: now,
            limits: app.deliveryLimits(instance))
        let liveActivity = try parsed.liveActivity(delivery: delivery, now: now)
        if liveActivity != nil, instance.apns?.supportsTokenOnlyPushTypes == false {
            // APNs takes `liveactivity` pushes on token-authenticated connections only (docs/APNS.md §4).
            throw BeamsError.schema(
                "x_live_activity",
                "Live Activity pushes need token authentication (a .p8 key); this "
                    + "instance authenticates with a certificate")
        }
        var plan = try PublishPlan(
            request: parsed, body: body, instanceID: instance.id, publishID: publishID,
            delivery: delivery)
        if let liveActivity { plan.useLiveActivity(liveActivity) }
        // A local-time publish's first round runs at its start moment and finds the zones' due moments.
        let notBefore = delivery?.localTimeFrom ?? delivery?.sendAt
        var job = PublishJob(
            instanceID: instance.id, publishID: publishID, kind: kind, targets: parsed.targets,
            payload: plan.encoded(), webhookURL: parsed.webhookURL, createdAt: now,
            notBefore: notBefore,
            beamsForward: Self.beamsForward(
                bridge: bridge, liveActivity: liveActivity != nil, body: body,
                instance: instance, kind: kind, publishID: publishID),
            dailyPublishQuota: instance.quotas.publishesPerDay)
        if let trace {
            trace.set("beams.publish_id", publishID)
            trace.set("beams.publish.targets", parsed.targets.count)
            job.traceParent = trace.context.traceparent
            job.traceState = trace.context.traceState.isEmpty ? nil : trace.context.traceState
        }
        // The answer waits for the commit: an acknowledged publish survives a crash.
        let commit = trace.map {
            app.tracer.startSpan(
                "publish commit", parent: $0.context,
                attributes: [
                    Attribute("beams.publish_id", publishID), Attribute("db.operation.name", "enqueuePublish"),
                ])
        }
        do {
            _ = try await app.publishQueue.enqueuePublish(job)
            commit?.end()
        } catch PushStoreError.publishQuotaReached {
            commit?.setStatus(.error, "publish quota reached")
            commit?.end()
            // Counted in the store with the job, so the quota holds across nodes; nothing of this publish is stored.
            app.quotaRefused(instance, .publishesPerDay)
            throw BeamsError.publishQuota(
                instance.quotas.publishesPerDay ?? 0,
                retryAfter: UTCDay.secondsUntilNextDay(after: now),
                resetsAt: UTCDay(containing: now).next.start.iso8601)
        } catch {
            commit?.setStatus(.error, "\(error)")
            commit?.end()
            throw error
        }
        app.keepPlan(plan, job)
        app.publishEnqueued()
        app.metrics.increment(.publishes, ["kind": kind.rawValue])
        app.logger.info(
            "Publish accepted",
            [
                "publish": publishID, "kind": kind.rawValue, "targets": String(parsed.targets.count),
                "request": request.requestID, "notBefore": notBefore?.iso8601 ?? "",
                "throttlePerMinute": delivery?.throttlePerMinute.map(String.init) ?? "",
            ])
        var answer: [String: JSONValue] = ["publishId": .string(publishID)]
        // Beyond Beams, and harmless to its SDKs (they decode `publishId` only, or return the whole object).
        if let sendAt = delivery?.sendAt { answer["scheduledFor"] = .string(sendAt.iso8601) }
        return .json(.object(answer))
    }

    /// `pubid-` and a random (version 4) UUID in lower case. The bits come from `SystemRandomNumberGenerator`
    /// (`getrandom`): Foundation's `UUID()` opens, reads and closes `/dev/urandom` on Linux, three system calls per
    /// publish (docs/BENCHMARKS.md "Publish intake").
    static func newPublishID() -> String {
        var generator = SystemRandomNumberGenerator()
        var words = (generator.next() as UInt64, generator.next() as UInt64)
        let uuid = withUnsafeMutableBytes(of: &words) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 9562 variant
            return raw.load(as: uuid_t.self)
        }
        return "pubid-" + UUID(uuid: uuid).uuidString.lowercased()
    }

    /// The copy of a publish for the Beams bridge (docs/MIGRATING.md): none without a bridge, for a Live Activity
    /// publish (Beams has none) or when nothing for Beams' platforms is left (`BeamsBridgeBody.forBeams`). A
    /// scheduled publish's copy is due at the publish's start moment (the store queues it at `notBefore`).
    static func beamsForward(
        bridge: BeamsBridgeConfig?, liveActivity: Bool, body: [UInt8], instance: InstanceConfig,
        kind: PublishKind, publishID: String
    ) -> BeamsForward? {
        guard bridge != nil, !liveActivity, let forwarded = BeamsBridgeBody.forBeams(body) else { return nil }
        return BeamsForward(
            instanceID: instance.id, kind: kind == .users ? .publishUsers : .publishInterests,
            key: publishID, body: Data(forwarded))
    }

    /// `DELETE …/publishes/{publishId}` (beyond Beams): cancels a scheduled or running publish. A running one has
    /// stopped handing notifications to the senders when the answer comes; on this node its waiting retries end
    /// at once (`RetryScope`), so the run normally ends first and the answer is `cancelled` with the final counts
    /// (docs/API.md, `DELETE …/publishes/{publishId}`).
    func cancel(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        let publishID = request.parameters["publish"] ?? ""
        let actor = try await app.authorizeChange(
            request, instance, .publish, action: "publish.cancel",
            target: String(publishID.prefix(200)))
        try app.checkRateLimit(instance)
        let outcome = try await app.publishQueue.cancelPublish(
            instanceID: instance.id, publishID: publishID, now: app.now(),
            audit: actor.entry(instance.id, "publish.cancel", publishID, at: app.now()))
        let status: PublishStatus
        switch outcome {
        case nil:
            throw BeamsError(404, "Publish not found", "Could not find the publish")
        case .alreadyEnded(let ended)?:
            throw Self.alreadyEnded(ended)
        case .cancelled(let cancelled)?:
            status = cancelled
        case .running(let id)?:
            let stoppedHere = await app.cancelRun(id)
            guard let current = try await app.publishQueue.publishStatus(instanceID: instance.id, publishID: publishID)
            else { throw BeamsError(404, "Publish not found", "Could not find the publish") }
            // It ended on its own between the store's answer and the stop: nothing was cancelled.
            if current.state.isFinal && current.state != .cancelled { throw Self.alreadyEnded(current) }
            status = current
            app.logger.info(
                "Publish cancel requested while running",
                ["publish": publishID, "stoppedHere": String(stoppedHere), "request": request.requestID])
        }
        app.logger.info(
            "Publish cancelled",
            [
                "publish": publishID, "state": status.state.rawValue,
                "request": request.requestID,
            ])
        return .json(Self.render(status, now: app.now()))
    }

    static func alreadyEnded(_ status: PublishStatus) -> BeamsError {
        BeamsError(409, "Conflict", "The publish already ended: it is \(status.state.rawValue)")
    }

    /// The status the API shows: `scheduled` for a queued publish waiting for its time (or its next local-time
    /// round), `cancelling` for a running one whose cancel has not reached its worker yet.
    static func displayedState(_ status: PublishStatus, now: Date) -> String {
        switch status.state {
        case .queued where (status.notBefore.map { $0 > now } ?? false): return "scheduled"
        case .running where status.cancelRequested: return "cancelling"
        default: return status.state.rawValue
        }
    }

    func status(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .publishRead)
        let publishID = request.parameters["publish"] ?? ""
        guard let status = try await app.publishQueue.publishStatus(instanceID: instance.id, publishID: publishID)
        else {
            throw BeamsError(404, "Publish not found", "Could not find the publish")
        }
        guard let forward = try await app.beamsForwards?.beamsForward(instanceID: instance.id, publishID: publishID),
            case .object(var object) = Self.render(status, now: app.now())
        else { return .json(Self.render(status, now: app.now())) }
        object["beamsBridge"] = Self.renderBeamsForward(forward)
        return .json(.object(object))
    }

    func recent(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .publishRead)
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

    /// The `beamsBridge` member of a bridged publish's status (docs/API.md): `state` (`pending`, `delivered`,
    /// `failed`), `attempts`, Beams' `publishId` once delivered, the last `error` (Beams' own description, or why
    /// it was not sent), and when it was queued and ended.
    static func renderBeamsForward(_ forward: BeamsForwardRecord) -> JSONValue {
        var object: [String: JSONValue] = [
            "state": .string(forward.state.rawValue), "attempts": .int(forward.attempts),
            "queuedAt": .string(forward.createdAt.iso8601),
        ]
        if let upstream = forward.upstreamID { object["publishId"] = .string(upstream) }
        if let error = forward.lastError { object["error"] = .string(error) }
        if let finished = forward.finishedAt { object["finishedAt"] = .string(finished.iso8601) }
        return .object(object)
    }

    /// FCM's, Web Push's or UnifiedPush's counts in the status document (APNs keeps its original `apns` object).
    static func platformCounts(_ status: PublishStatus, _ platform: Platform) -> JSONValue {
        .object([
            "accepted": .int(Int(status.accepted(on: platform))),
            "failed": .int(Int(status.failed(on: platform))),
            "failedByReason": .object(status.failedByReason(on: platform).mapValues { .int(Int($0)) }),
            "devicesRemoved": .int(Int(status.counters[.devicesRemovedOn(platform)] ?? 0)),
        ])
    }

    /// The status document: state, counts by outcome and platform, and timing.
    static func render(_ status: PublishStatus, now: Date) -> JSONValue {
        let failed = status.failedByReason
        var object: [String: JSONValue] = [
            "publishId": .string(status.publishID),
            "kind": .string(status.kind.rawValue),
            "status": .string(displayedState(status, now: now)),
            "attempts": .int(status.attempts),
            "createdAt": .string(status.createdAt.iso8601),
            "targets": .int(Int(status.targetsTotal ?? status.counters[.targets] ?? 0)),
            "apns": .object([
                "accepted": .int(Int(status.accepted)),
                "failed": .int(Int(status.failed)),
                "failedByReason": .object(failed.mapValues { .int(Int($0)) }),
                "environmentRetries": .int(Int(status.counters[.environmentRetries] ?? 0)),
            ]),
            "devicesRemoved": .int(Int(status.counters[.devicesRemoved] ?? 0)),
            "fcm": platformCounts(status, .fcm),
            "web": platformCounts(status, .web),
            "unifiedpush": platformCounts(status, .unifiedpush),
            "hms": platformCounts(status, .hms),
            "reports": .object(["delivered": .int(status.delivered), "opened": .int(status.opened)]),
        ]
        if let started = status.startedAt {
            object["startedAt"] = .string(started.iso8601)
            let end = status.finishedAt ?? now
            object["durationMs"] = .int(Int(saturating: (end.timeIntervalSince(started) * 1000).rounded()))
        }
        if let finished = status.finishedAt { object["finishedAt"] = .string(finished.iso8601) }
        if status.state == .queued, let notBefore = status.notBefore {
            object["scheduledFor"] = .string(notBefore.iso8601)
        }
        if let summary = status.summary { object["summary"] = .string(summary) }
        if let estimate = PublishEstimate(status, now: now) { object.merge(estimate.members) { _, new in new } }
        if let removed = status.counters[.liveActivityTokensRemoved] {
            object["liveActivityTokensRemoved"] = .int(Int(removed))
        }
        if status.kind == .channels {
            object["broadcast"] = BroadcastStatus.render(status.counters)
        }
        return .object(object)
    }
}
