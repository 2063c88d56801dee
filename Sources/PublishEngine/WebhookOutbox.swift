import BeamsModel
import Clocks
import ConfigModel
import Foundation
import HTTPClient
import JSON
import JWTSigner
import Lifecycle
import Locking
import Logging
import Observability
import PushStore
import Tracing

/// Webhooks, queued durably in the store's outbox and delivered by `run()` on their own schedule, so a slow or
/// dead receiver never slows delivery (docs/BEAMS-PROTOCOL.md §10).
///
/// - Per-publish `webhookUrl`: `STARTED` and `FINISHED` bodies (camelCase, unsigned; credentials go in the URL).
/// - Instance webhooks: `v1.PublishToUsersAttempt`, `v1.UserNotificationAcknowledgement`, `v1.UserNotificationOpen`,
///   signed with `Webhook-Signature` = hex HMAC-SHA1 of the body keyed with the webhook secret.
///
/// Sent by an `HTTPExchangeClient` (`HTTPExchangeConfiguration.webhooks`): URLs come from API callers, so its destination policy refuses
/// loopback, private and link-local addresses after DNS resolution unless `webhooks.allowedDestinations` allows
/// them, and redirects, slow receivers and oversized answers are cut (`webhooks.*` in the config).
///
/// A `Service`: `run()` delivers until cancelled. It claims whenever the scheduler has room and starts what
/// `WebhookScheduler` hands out (attempts side by side, bounded per destination, instances in turn, a circuit
/// breaker per destination), so one slow receiver holds a few slots, never the outbox. It sleeps until a webhook is
/// queued here, an attempt ends, or the next one is due (a retry's time, a claim's lease end, a breaker's trial),
/// never polling.
package final class WebhookOutbox: Service {
    /// Beams retries up to 4 times: after 10 s, then +30 s, +120 s, +300 s.
    static let retryDelays: [TimeInterval] = [10, 30, 120, 300]
    /// Webhooks claimed at a time, at most (the scheduler's room bounds it too).
    static let batchSize = 16
    /// How long a claimed webhook stays hidden from other claims: past it, an attempt that was never recorded (a
    /// crash, an aborted attempt at shutdown) is made again.
    static let leaseDuration = Duration.seconds(60)
    /// How long to wait before asking again when the store could not answer (an outage): a real deadline.
    static let storeRetryInterval: TimeInterval = 1
    /// The longest single sleep; a far-off due time is looked up again after it (it also bounds the conversion).
    static let longestSleep: TimeInterval = 3600
    /// How long a webhook whose destination holds its whole share goes back to the store for.
    static let deferDelay: TimeInterval = 5
    /// The stored headers' entry naming the webhook's instance (for the scheduler's turns). A colon can never start
    /// an HTTP field name, so it cannot clash with a real header; it is removed before sending.
    static let instanceKey = ":instance"
    /// The stored headers' entries for the trace context a webhook was queued in (a publish's run span), when
    /// tracing is on: its attempt is a CLIENT span under it and sends `traceparent` with that span's id.
    static let traceParentKey = ":traceparent"
    static let traceStateKey = ":tracestate"

    package let name = "webhooks"
    private let store: any PushStorage
    private let client: HTTPExchangeClient
    private let logger: Logger
    private let metrics: Metrics
    /// Yielded when a webhook was queued or a due time came; buffers one, so a wake-up during a delivery is kept.
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let settings: WebhookScheduler<PendingWebhook>.Settings
    private let scheduler: Locked<WebhookScheduler<PendingWebhook>>
    /// Ids of the webhooks the scheduler holds (queued or running).
    private let heldIDs = Locked<Set<Int64>>([])
    private let tracer: Tracer

    package init(
        store: any PushStorage, client: HTTPExchangeClient, metrics: Metrics, logger: Logger,
        settings: WebhookScheduler<PendingWebhook>.Settings = .init(), tracer: Tracer = .disabled
    ) {
        self.tracer = tracer
        self.settings = settings
        scheduler = Locked(WebhookScheduler(settings: settings))
        self.store = store
        self.client = client
        self.metrics = metrics
        self.logger = logger
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        metrics.declare(.webhooks)
        metrics.declare(.webhookFailures)
    }

    // MARK: Producing

    package func publishStarted(url: String, instanceID: String, publishID: String, requestBody: JSONValue) async {
        await enqueue(
            url: url,
            body: .object([
                "publishId": .string(publishID), "status": .string("STARTED"), "requestBody": requestBody,
            ]), headers: ["Content-Type": "application/json", Self.instanceKey: instanceID])
    }

    package func publishFinished(url: String, status: PublishStatus, requestBody: JSONValue) async {
        var results: [String: JSONValue] = [
            "apns": .object([
                "numSuccessfulPublishes": .int(Int(status.accepted)),
                "numFailedPublishes": .int(Int(status.failed)),
            ]),
            "failed": .bool(status.state == .failed),
        ]
        // FCM, Web Push and UnifiedPush results appear for publishes that carried those parts, as Beams reported
        // per platform.
        for platform in [Platform.fcm, .web, .unifiedpush, .hms]
        where requestBody.objectValue?[platform.rawValue] != nil {
            results[platform.rawValue] = .object([
                "numSuccessfulPublishes": .int(Int(status.accepted(on: platform))),
                "numFailedPublishes": .int(Int(status.failed(on: platform))),
            ])
        }
        await enqueue(
            url: url,
            body: .object([
                "publishId": .string(status.publishID),
                "status": .string("FINISHED"),
                "requestBody": requestBody,
                "results": .object(results),
            ]), headers: ["Content-Type": "application/json", Self.instanceKey: status.instanceID])
    }

    package func publishToUsersAttempt(
        instance: InstanceConfig, publishID: String, requested: [String],
        delivered: Set<String>, failed: Set<String>, seen: Set<String>
    ) async {
        let noDevices = requested.filter { !seen.contains($0) }
        await instanceEvent(
            instance, type: "v1.PublishToUsersAttempt",
            payload: [
                "instance_id": .string(instance.id),
                "publish_id": .string(publishID),
                "users_delivered_to_gateway": .array(delivered.sorted().map(JSONValue.string)),
                "users_no_devices": .array(noDevices.map(JSONValue.string)),
                "users_gateway_failed": .array(failed.sorted().map(JSONValue.string)),
            ])
    }

    package func userEvent(_ instance: InstanceConfig, _ event: ReportingEvent) async {
        guard let user = event.userID else { return }
        let type = event.kind == .open ? "v1.UserNotificationOpen" : "v1.UserNotificationAcknowledgement"
        await instanceEvent(
            instance, type: type,
            payload: [
                "instance_id": .string(instance.id), "publish_id": .string(event.publishID), "user_id": .string(user),
            ])
    }

    /// A `device.invalidated` event to the instance's `webhook.invalidationsUrl` (docs/API.md "Device
    /// invalidations"): the Beams envelope, signed twice with the webhook secret: Standard Webhooks' `webhook-id`,
    /// `webhook-timestamp` and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`), and Beams'
    /// hex HMAC-SHA1 of the body. Field names are case-insensitive, so Beams' `Webhook-Signature` and Standard
    /// Webhooks' `webhook-signature` are one field: it carries the Standard Webhooks value, and the HMAC-SHA1 goes
    /// in `Webhook-Signature-SHA1`. The id is the event's own, the same on every retry and in the feed, so a
    /// receiver de-duplicates by it. Nothing is queued without an `invalidationsUrl`.
    package func deviceInvalidated(_ instance: InstanceConfig, _ event: DeviceInvalidation, now: Date = Date()) async {
        guard let hook = instance.webhook, let url = hook.invalidationsURL else { return }
        let eventID = DeviceInvalidationEvent.eventID(event)
        let type = DeviceInvalidationEvent.eventType(event)
        let body = JSONValue.object([
            "payload": DeviceInvalidationEvent.render(event),
            "metadata": .object([
                "created_at": .string(now.iso8601), "event_type": .string(type),
                "event_id": .string(eventID), "product": .string("beams"),
            ]),
            "custom_data": .object([:]),
        ])
        let bytes = body.serialized()
        var headers = Self.standardWebhookHeaders(id: eventID, body: bytes, secret: hook.secret, now: now)
        headers["Content-Type"] = "application/json"
        headers["User-Agent"] = "pusher-webhooks"
        headers["Webhook-Event-Type"] = type
        headers[Self.instanceKey] = instance.id
        if let signature = try? HMACSHA1.hex(bytes, key: Array(hook.secret.utf8)) {
            headers["Webhook-Signature-SHA1"] = signature
        }
        await enqueue(url: url, bytes: bytes, headers: headers)
    }

    /// Standard Webhooks' headers for `body`: `webhook-id`, `webhook-timestamp` (Unix seconds) and
    /// `webhook-signature` = `v1,` + base64 of HMAC-SHA256 over `id.timestamp.body`, keyed with the secret's bytes
    /// (a `whsec_` secret's base64 part decoded, as Standard Webhooks libraries do; any other secret as UTF-8).
    /// The timestamp is when the event was queued: a retry keeps it, so a receiver's replay window counts from there.
    static func standardWebhookHeaders(id: String, body: [UInt8], secret: String, now: Date) -> [String: String] {
        let timestamp = String(Int64(now.timeIntervalSince1970))
        let signed = Array("\(id).\(timestamp).".utf8) + body
        var headers = ["webhook-id": id, "webhook-timestamp": timestamp]
        if let mac = try? HMACSHA256.authenticationCode(signed, key: standardWebhookKey(secret)) {
            headers["webhook-signature"] = "v1," + Data(mac).base64EncodedString()
        }
        return headers
    }

    /// The HMAC key of a webhook secret: a `whsec_<base64>` secret's decoded bytes, else its UTF-8 bytes.
    static func standardWebhookKey(_ secret: String) -> [UInt8] {
        if secret.hasPrefix("whsec_"), let key = Data(base64Encoded: String(secret.dropFirst(6))) { return Array(key) }
        return Array(secret.utf8)
    }

    private func instanceEvent(_ instance: InstanceConfig, type: String, payload: [String: JSONValue]) async {
        guard let hook = instance.webhook else { return }
        let eventID = UUID().uuidString.lowercased()
        let body = JSONValue.object([
            "payload": .object(payload),
            "metadata": .object([
                "created_at": .string(Date().iso8601), "event_type": .string(type),
                "event_id": .string(eventID), "product": .string("beams"),
            ]),
            "custom_data": .object([:]),
        ])
        let bytes = body.serialized()
        var headers = [
            "Content-Type": "application/json", "User-Agent": "pusher-webhooks", "Webhook-Event-Type": type,
            "Webhook-ID-UUID": eventID, "Webhook-Request-ID-UUID": UUID().uuidString.lowercased(),
            Self.instanceKey: instance.id,
        ]
        if let signature = try? HMACSHA1.hex(bytes, key: Array(hook.secret.utf8)) {
            headers["Webhook-Signature"] = signature
        }
        await enqueue(url: hook.url, bytes: bytes, headers: headers)
    }

    private func enqueue(url: String, body: JSONValue, headers: [String: String]) async {
        await enqueue(url: url, bytes: body.serialized(), headers: headers)
    }

    private func enqueue(url: String, bytes: [UInt8], headers: [String: String]) async {
        var headers = headers
        if tracer.isEnabled, let trace = TraceContext.current {
            headers[Self.traceParentKey] = trace.traceparent
            if !trace.traceState.isEmpty { headers[Self.traceStateKey] = trace.traceState }
        }
        do {
            _ = try await store.enqueueWebhook(
                WebhookRequest(url: url, body: Data(bytes), headers: headers), now: Date())
            wake.yield()
        } catch {
            logger.error("Queuing a webhook failed", ["error": "\(error)"])
        }
    }

    // MARK: Delivering

    /// Delivers due webhooks until cancelled; then aborts the attempts in flight (they are not marked, so their
    /// lease runs out and they are retried after the restart: at-least-once) and frees the client's curl handles.
    package func run() async {
        await withTaskCancellationHandler {
            await deliverUntilCancelled()
        } onCancel: { [client] in
            Task { await client.shutdown() }
        }
        await client.shutdown()
    }

    private func deliverUntilCancelled() async {
        var woken = wakeups.makeAsyncIterator()
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                var nextDue: Date?
                do {
                    let room = scheduler.withLock { $0.room }
                    var claimedAll = true
                    if room > 0 {
                        let limit = min(room, Self.batchSize)
                        let due = try await store.dueWebhooks(
                            now: Date(), limit: limit, leaseDuration: Self.leaseDuration)
                        await admit(due)
                        claimedAll = due.count < limit
                    }
                    start(in: &group)
                    if !claimedAll { continue }  // more may be due: claim again while there is room
                    // With no room, the next attempt to end wakes the loop; a due time already past would spin.
                    if scheduler.withLock({ $0.room }) > 0 { nextDue = try await store.nextWebhookDue() }
                } catch {
                    // Logged once per interval by StoreHealth; asked again after a short, fixed wait.
                    logger.debug("Reading the webhook outbox failed", ["error": "\(error)"])
                    nextDue = Date().addingTimeInterval(Self.storeRetryInterval)
                }
                let now = MonotonicClock.seconds()
                let trial = scheduler.withLock { $0.nextBreakerTrial }.map { Date().addingTimeInterval($0 - now) }
                let timer = [nextDue, trial].compactMap { $0 }.min().map {
                    wake.wake(at: $0, longest: Self.longestSleep)
                }
                // nil once the task is cancelled (the stream ends then). An attempt that ends wakes it too.
                let event: Void? = await woken.next()
                timer?.cancel()
                if event == nil { return }
            }
        }
    }

    /// Hands claimed webhooks to the scheduler; those whose destination holds its whole share already go back to
    /// the store for later, no attempt spent.
    private func admit(_ due: [PendingWebhook]) async {
        // A webhook held longer than its lease (a slow destination with a long `webhooks.timeoutSeconds`) is due
        // again in the store: claimed a second time, it is already here and is not queued twice.
        let fresh = heldIDs.withLock { held in due.filter { !held.contains($0.id) } }
        let deferred = scheduler.withLock { scheduler -> [PendingWebhook] in
            fresh.filter { webhook in
                let key = Self.keys(webhook)
                return scheduler.add(webhook, instance: key.instance, destination: key.destination, order: key.order)
                    == .deferred
            }
        }
        let queued = Set(fresh.map(\.id)).subtracting(deferred.map(\.id))
        heldIDs.withLock { $0.formUnion(queued) }
        for webhook in deferred {
            await record(webhook, .deferred(until: Date().addingTimeInterval(Self.deferDelay)))
        }
    }

    /// Starts what the scheduler hands out: attempts as child tasks (each wakes the loop when it ends), and
    /// failed attempts recorded, without sending, for destinations whose breaker is open.
    private func start(in group: inout DiscardingTaskGroup) {
        let now = MonotonicClock.seconds()
        let steps = scheduler.withLock { $0.next(now: now) }
        for step in steps {
            switch step {
            case .send(let webhook):
                group.addTask { [self] in
                    let result = await attempt(webhook)
                    let key = Self.keys(webhook)
                    let ended = MonotonicClock.seconds()
                    scheduler.withLock {
                        $0.finished(destination: key.destination, order: key.order, result: result, now: ended)
                    }
                    heldIDs.withLock { _ = $0.remove(webhook.id) }
                    wake.yield()
                }
            case .skip(let webhook):
                group.addTask { [self] in
                    let destination = Self.keys(webhook).destination
                    metrics.increment(.webhookFailures, ["reason": "circuit_open"])
                    let error =
                        "circuit_open: \(destination) timed out \(settings.breakerThreshold) times in a row; not sent"
                    await record(webhook, Self.nextOutcome(attempts: webhook.attempts, error: error))
                    heldIDs.withLock { _ = $0.remove(webhook.id) }
                }
            }
        }
    }

    /// The scheduler's keys of a webhook: its instance (stored with it), its destination (scheme, host and port)
    /// and its order key (a publish's `STARTED` and `FINISHED` to one URL share one; any other is alone).
    static func keys(_ webhook: PendingWebhook) -> (instance: String, destination: String, order: String) {
        let request = webhook.request
        let destination = (try? HTTPURL(request.url))?.redacted ?? request.url
        var order = "#\(webhook.id)"
        if let publishID = JSONValue.parse([UInt8](request.body))?.objectValue?["publishId"]?.stringValue {
            order = request.url + "\n" + publishID
        }
        return (request.headers[instanceKey] ?? "", destination, order)
    }

    /// One attempt, recorded. - Returns: how it ended, for the destination's breaker.
    private func attempt(_ webhook: PendingWebhook) async -> WebhookScheduler<PendingWebhook>.Result {
        let request = webhook.request
        let failure: (reason: String, message: String)
        let result: WebhookScheduler<PendingWebhook>.Result
        var headers = request.headers
        headers[Self.instanceKey] = nil
        let span = startSpan(&headers, url: request.url, attempt: webhook.attempts + 1)
        defer { span?.end() }
        do {
            let status = try await client.send(Self.exchange(url: request.url, headers: headers, body: request.body))
                .status
            span?.set("http.response.status_code", status)
            // A client span marks every 4xx and 5xx as an error (semantic conventions, HTTP client spans).
            if status >= 400 {
                span?.set("error.type", String(status))
                span?.setStatus(.error, "HTTP \(status)")
            }
            if (200..<300).contains(status) {
                await record(webhook, .delivered)
                return .answered
            }
            let redirect = (300..<400).contains(status) ? " (redirects are not followed)" : ""
            failure = ("http_status", "\(Self.redacted(request.url)) answered HTTP \(status)\(redirect)")
            result = .answered
        } catch {
            span?.set("error.type", error.kind.rawValue)
            span?.setStatus(.error, error.message)
            if error.kind == .shutdown { return .answered }
            failure = (error.kind.rawValue, error.message)
            result = error.kind == .timeout || error.kind == .connection ? .timedOut : .answered
        }
        metrics.increment(.webhookFailures, ["reason": failure.reason])
        let fields: KeyValuePairs<String, String> = [
            "url": Self.redacted(request.url), "reason": failure.reason, "error": failure.message,
            "attempt": String(webhook.attempts + 1),
        ]
        if failure.reason == HTTPExchangeError.Kind.refusedDestination.rawValue {
            logger.warning("Webhook destination refused", fields)
        } else {
            logger.notice("Webhook attempt failed", fields)
        }
        await record(
            webhook, Self.nextOutcome(attempts: webhook.attempts, error: "\(failure.reason): \(failure.message)"))
        return result
    }

    /// The attempt's CLIENT span when the webhook was queued in a trace (and tracing is on): takes the stored trace
    /// context out of `headers` and puts `traceparent` (this span's id) and the `tracestate` in.
    private func startSpan(_ headers: inout [String: String], url: String, attempt: Int) -> Span? {
        let stored = headers.removeValue(forKey: Self.traceParentKey)
        let state = headers.removeValue(forKey: Self.traceStateKey)
        guard tracer.isEnabled, let stored, let parent = TraceContext(traceparent: stored, tracestate: state) else {
            return nil
        }
        var attributes = [
            Attribute("http.request.method", "POST"), Attribute("http.request.resend_count", attempt - 1),
        ]
        if let target = try? HTTPURL(url) {
            attributes += [
                Attribute("server.address", target.host), Attribute("server.port", target.port),
                Attribute("url.scheme", target.scheme),
            ]
        }
        let span = tracer.startSpan("POST", kind: .client, parent: parent, attributes: attributes)
        headers["traceparent"] = span.context.traceparent
        if !span.context.traceState.isEmpty { headers["tracestate"] = span.context.traceState }
        return span
    }

    /// The POST of a stored webhook (headers in name order).
    /// - Throws: `invalidURL` when the stored URL does not parse (nothing is sent).
    static func exchange(url: String, headers: [String: String], body: some Sequence<UInt8>)
        throws(HTTPExchangeError) -> HTTPExchange
    {
        let target: HTTPURL
        do {
            target = try HTTPURL(url)
        } catch {
            throw HTTPExchangeError(.invalidURL, "the URL \(error)")
        }
        let lines = headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        return HTTPExchange(url: target, headers: lines, body: Array(body))
    }

    private func record(_ webhook: PendingWebhook, _ outcome: WebhookOutcome) async {
        switch outcome {
        case .delivered: metrics.increment(.webhooks, ["outcome": "delivered"])
        case .retry: metrics.increment(.webhooks, ["outcome": "retry"])
        case .gaveUp: metrics.increment(.webhooks, ["outcome": "gave_up"])
        case .deferred: metrics.increment(.webhooks, ["outcome": "deferred"])
        }
        try? await store.markWebhook(webhook.id, outcome: outcome, now: Date())
    }

    /// After a failed attempt: retry on Beams' schedule, or give up after the last delay.
    static func nextOutcome(attempts: Int, error: String, now: Date = Date()) -> WebhookOutcome {
        guard retryDelays.indices.contains(attempts) else { return .gaveUp(error: error) }
        return .retry(at: now.addingTimeInterval(retryDelays[attempts]), error: error)
    }

    /// The URL without credentials, path or query, for logs (a `webhookUrl` may carry basic-auth credentials).
    static func redacted(_ url: String) -> String {
        (try? HTTPURL(url))?.redacted ?? "(invalid URL)"
    }
}
