import Foundation
import HTTPClient
import JSON
import JWTSigner
import Lifecycle
import Logging
import PushStore

/// Webhooks, queued durably in the store's outbox and delivered by `run()` on their own schedule, so a slow or
/// dead receiver never slows delivery (docs/BEAMS-PROTOCOL.md §10).
///
/// - Per-publish `webhookUrl`: `STARTED` and `FINISHED` bodies (camelCase, unsigned; credentials go in the URL).
/// - Instance webhooks: `v1.PublishToUsersAttempt`, `v1.UserNotificationAcknowledgement`, `v1.UserNotificationOpen`,
///   signed with `Webhook-Signature` = hex HMAC-SHA1 of the body keyed with the webhook secret.
///
/// Sent by `HTTPPostClient` (libcurl, like APNs): URLs come from API callers, so its destination policy refuses
/// loopback, private and link-local addresses after DNS resolution unless `webhooks.allowedDestinations` allows
/// them, and redirects, slow receivers and oversized answers are cut (`webhooks.*` in the config).
///
/// A `Service`: `run()` delivers until cancelled. It sleeps until a webhook is queued here or the next one is due
/// (a retry's time, or the end of a claim's lease), never polling.
final class WebhookOutbox: Service {
    /// Beams retries up to 4 times: after 10 s, then +30 s, +120 s, +300 s.
    static let retryDelays: [TimeInterval] = [10, 30, 120, 300]
    /// Webhooks claimed at a time.
    static let batchSize = 16
    /// How long a claimed webhook stays hidden from other claims: past it, an attempt that was never recorded (a
    /// crash, an aborted attempt at shutdown) is made again.
    static let leaseDuration = Duration.seconds(60)
    /// How long to wait before asking again when the store could not answer (an outage): a real deadline.
    static let storeRetryInterval: TimeInterval = 1
    /// The longest single sleep; a far-off due time is looked up again after it (it also bounds the conversion).
    static let longestSleep: TimeInterval = 3600

    let name = "webhooks"
    private let store: any PushStorage
    private let client: HTTPPostClient
    private let logger: Logger
    private let metrics: Metrics
    /// Yielded when a webhook was queued or a due time came; buffers one, so a wake-up during a delivery is kept.
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(store: any PushStorage, client: HTTPPostClient, metrics: Metrics, logger: Logger) {
        self.store = store
        self.client = client
        self.metrics = metrics
        self.logger = logger
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        metrics.declare("push_webhooks_total", counter: "Webhook attempts by outcome.")
        metrics.declare("push_webhook_failures_total", counter: "Failed webhook attempts by reason.")
    }

    // MARK: Producing

    func publishStarted(url: String, publishID: String, requestBody: JSONValue) async {
        await enqueue(url: url, body: .object([
            "publishId": .string(publishID), "status": .string("STARTED"), "requestBody": requestBody,
        ]), headers: ["Content-Type": "application/json"])
    }

    func publishFinished(url: String, status: PublishStatus, requestBody: JSONValue) async {
        var results: [String: JSONValue] = [
            "apns": .object(["numSuccessfulPublishes": .int(Int(status.accepted)),
                             "numFailedPublishes": .int(Int(status.failed))]),
            "failed": .bool(status.state == .failed),
        ]
        // FCM and Web Push results appear for publishes that carried those parts, as Beams reported per platform.
        for platform in [Platform.fcm, .web] where requestBody.objectValue?[platform.rawValue] != nil {
            results[platform.rawValue] = .object([
                "numSuccessfulPublishes": .int(Int(status.accepted(on: platform))),
                "numFailedPublishes": .int(Int(status.failed(on: platform))),
            ])
        }
        await enqueue(url: url, body: .object([
            "publishId": .string(status.publishID),
            "status": .string("FINISHED"),
            "requestBody": requestBody,
            "results": .object(results),
        ]), headers: ["Content-Type": "application/json"])
    }

    func publishToUsersAttempt(instance: InstanceConfig, publishID: String, requested: [String],
                               delivered: Set<String>, failed: Set<String>, seen: Set<String>) async {
        let noDevices = requested.filter { !seen.contains($0) }
        await instanceEvent(instance, type: "v1.PublishToUsersAttempt", payload: [
            "instance_id": .string(instance.id),
            "publish_id": .string(publishID),
            "users_delivered_to_gateway": .array(delivered.sorted().map(JSONValue.string)),
            "users_no_devices": .array(noDevices.map(JSONValue.string)),
            "users_gateway_failed": .array(failed.sorted().map(JSONValue.string)),
        ])
    }

    func userEvent(_ instance: InstanceConfig, _ event: ReportingEvent) async {
        guard let user = event.userID else { return }
        let type = event.kind == .open ? "v1.UserNotificationOpen" : "v1.UserNotificationAcknowledgement"
        await instanceEvent(instance, type: type, payload: [
            "instance_id": .string(instance.id), "publish_id": .string(event.publishID), "user_id": .string(user),
        ])
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
        do {
            _ = try await store.enqueueWebhook(WebhookRequest(url: url, body: Data(bytes), headers: headers), now: Date())
            wake.yield()
        } catch {
            logger.error("Queuing a webhook failed", ["error": "\(error)"])
        }
    }

    // MARK: Delivering

    /// Delivers due webhooks until cancelled; then aborts the attempts in flight (they are not marked, so their
    /// lease runs out and they are retried after the restart: at-least-once) and frees the client's curl handles.
    func run() async {
        await withTaskCancellationHandler {
            await deliverUntilCancelled()
        } onCancel: { [client] in
            Task { await client.shutdown() }
        }
        await client.shutdown()
    }

    private func deliverUntilCancelled() async {
        var woken = wakeups.makeAsyncIterator()
        while !Task.isCancelled {
            let nextDue: Date?
            do {
                let due = try await store.dueWebhooks(now: Date(), limit: Self.batchSize, leaseDuration: Self.leaseDuration)
                if !due.isEmpty {
                    await deliver(due)
                    continue
                }
                nextDue = try await store.nextWebhookDue()
            } catch {
                // Logged once per interval by StoreHealth; asked again after a short, fixed wait.
                logger.debug("Reading the webhook outbox failed", ["error": "\(error)"])
                nextDue = Date().addingTimeInterval(Self.storeRetryInterval)
            }
            let timer = nextDue.map(wake(at:))
            // nil once the task is cancelled (the stream ends then).
            let event: Void? = await woken.next()
            timer?.cancel()
            if event == nil { return }
        }
    }

    /// Yields a wake-up at `date` (a retry's time or a lease's end), unless cancelled first.
    private func wake(at date: Date) -> Task<Void, Never> {
        let seconds = min(max(date.timeIntervalSinceNow, 0), Self.longestSleep)
        // Rounded up: waking a moment early would find nothing due yet and sleep again for the remainder.
        let delay = Duration.milliseconds(Int64((seconds * 1000).rounded(.up)) + 1)
        return Task { [wake] in
            do {
                try await Task.sleep(for: delay)
                wake.yield()
            } catch {
                // Cancelled: woken otherwise.
            }
        }
    }

    private func deliver(_ due: [PendingWebhook]) async {
        // A small publish queues STARTED and FINISHED close together: delivering them concurrently let FINISHED
        // overtake STARTED. Webhooks to the same URL go one after the other, in queue order; different
        // receivers are still served side by side.
        var byURL: [String: [PendingWebhook]] = [:]
        var urls: [String] = []
        for webhook in due {
            if byURL[webhook.request.url] == nil { urls.append(webhook.request.url) }
            byURL[webhook.request.url, default: []].append(webhook)
        }
        await withDiscardingTaskGroup { group in
            for url in urls {
                let queue = byURL[url] ?? []
                group.addTask { for webhook in queue { await self.attempt(webhook) } }
            }
        }
    }

    private func attempt(_ webhook: PendingWebhook) async {
        let request = webhook.request
        let failure: (reason: String, message: String)
        do {
            let status = try await client.post(url: request.url, headers: request.headers, body: [UInt8](request.body))
            if (200..<300).contains(status) {
                await record(webhook, .delivered)
                return
            }
            let redirect = (300..<400).contains(status) ? " (redirects are not followed)" : ""
            failure = ("http_status", "\(Self.redacted(request.url)) answered HTTP \(status)\(redirect)")
        } catch {
            if error.kind == .shutdown { return }
            failure = (error.kind.rawValue, error.message)
        }
        metrics.increment("push_webhook_failures_total", ["reason": failure.reason])
        let fields: KeyValuePairs<String, String> = [
            "url": Self.redacted(request.url), "reason": failure.reason, "error": failure.message,
            "attempt": String(webhook.attempts + 1),
        ]
        if failure.reason == HTTPPostError.Kind.refusedDestination.rawValue {
            logger.warning("Webhook destination refused", fields)
        } else {
            logger.notice("Webhook attempt failed", fields)
        }
        await record(webhook, Self.nextOutcome(attempts: webhook.attempts, error: "\(failure.reason): \(failure.message)"))
    }

    private func record(_ webhook: PendingWebhook, _ outcome: WebhookOutcome) async {
        switch outcome {
        case .delivered: metrics.increment("push_webhooks_total", ["outcome": "delivered"])
        case .retry: metrics.increment("push_webhooks_total", ["outcome": "retry"])
        case .gaveUp: metrics.increment("push_webhooks_total", ["outcome": "gave_up"])
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
