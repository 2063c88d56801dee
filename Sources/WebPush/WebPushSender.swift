import Clocks
import Foundation
import HTTPClient
import JWTSigner
import Locking
import Logging

/// Sends Web Push messages (RFC 8030) over libcurl to the push services subscriptions name, safely towards
/// untrusted endpoints: only allowlisted push-service hosts (checked before anything is sent), and the webhook
/// SSRF rules on every address curl connects to (`DestinationPolicy`: no private or loopback addresses unless
/// allowed; never a redirect). VAPID per push-service origin (`VAPIDAuthorizer`), RFC 8291 encryption
/// (`WebPushRequest`), answers classified by `WebPushOutcome`, 429 and 5xx retried after `Retry-After`
/// (`WebPushRetryPolicy`), never past the notification's `deadline` (it ends `.expired` at once instead); cancelling
/// its `RetryScope` ends a waiting retry at once (`.cancelled`): retries belong to their publish run.
///
/// ```swift
/// let sender = try WebPushSender(vapid: authorizer)
/// await sender.submit(WebPushNotification(subscription: subscription, message: message)) { result in record(result) }
/// let unanswered = await sender.shutdown(gracePeriod: .seconds(10))
/// ```
///
/// `submit` suspends while the in-flight window, or the push service's share of it (`windowPerService`), is full;
/// once a message holds its slot, one of the shared encryption workers (`encryptsOnWorkers`) encrypts it (~0.1 ms
/// of CPU, see docs/BENCHMARKS.md) and hands it to curl, so a single submitting task keeps every core busy.
/// Messages to one subscription keep their submit order. Result callbacks run on the curl loop threads: keep them
/// short, never block.
package final class WebPushSender: Sendable {
    private final class Job: @unchecked Sendable {
        // @unchecked Sendable: `exchange`, `attempts` and `delaySpent` are touched by one step at a time (submit,
        // the encryption worker, then the completion of the exchange the previous step scheduled), never
        // concurrently; each step is handed to the next through a queue or curl's loop, which orders the writes.
        let id: Int
        let notification: WebPushNotification
        let onResult: @Sendable (WebPushResult) -> Void
        /// The encrypted request, set once before the first send.
        var exchange: HTTPExchange?
        var attempts = 0
        var delaySpent = 0.0

        init(id: Int, notification: WebPushNotification, onResult: @escaping @Sendable (WebPushResult) -> Void) {
            self.id = id
            self.notification = notification
            self.onResult = onResult
        }
    }

    /// What the sender counts and tracks, under the ledger's lock with its pending jobs.
    private struct State {
        var counters = WebPushSenderStats()
        var credentials = WebPushCredentialTracker()
        /// Hosts contacted recently, for `WebPushOpenEndpoints.maxHosts` (empty with an allow-list).
        var hosts: DistinctHostBook
    }

    package let vapid: VAPIDAuthorizer
    package let configuration: WebPushSenderConfiguration
    private let client: HTTPExchangeClient
    private let ledger: SenderLedger<Job, State>
    /// nil: encrypt on the submitting task (`encryptsOnWorkers` false).
    private let workers: WebPushEncryptionWorkers?
    /// The header lines of the last request and what they were made from: a publish's messages share the message
    /// headers and, per push service, the VAPID token, so consecutive requests reuse one array (and the transport
    /// one curl header list) instead of formatting six lines, the ~500-byte `Authorization` among them, per message.
    private let lastHeaderLines = Locked<(source: HeaderSource, lines: [String])?>(nil)

    /// What a request's header lines depend on.
    private struct HeaderSource: Equatable {
        let ttl: Int
        let urgency: WebPushUrgency?
        let topic: String?
        let authorization: VAPIDAuthorization
    }

    /// - Throws: `CurlError` when libcurl cannot be set up.
    package init(vapid: VAPIDAuthorizer, configuration: WebPushSenderConfiguration = WebPushSenderConfiguration())
        throws(CurlError)
    {
        self.vapid = vapid
        self.configuration = configuration
        client = try HTTPExchangeClient(
            configuration: HTTPExchangeConfiguration(
                name: "webpush", connections: configuration.connections,
                maxConnectionsPerHost: configuration.connectionsPerHost,
                streamsPerConnection: 100, http2: true, httpsOnly: true, caFile: configuration.caFile,
                policy: configuration.policy, timeout: .seconds(configuration.requestTimeout),
                connectTimeout: .seconds(configuration.connectTimeout), maxResponseBytes: 16 * 1024))
        let open = configuration.openEndpoints
        ledger = SenderLedger(
            capacity: configuration.window, perKey: configuration.windowPerService,
            state: State(
                hosts: DistinctHostBook(limit: open?.maxHosts ?? 1, idleSeconds: open?.hostIdleSeconds ?? 0)))
        workers = configuration.encryptsOnWorkers ? .shared : nil
    }

    /// Sends one notification and waits for its final result (retries included).
    package func send(_ notification: WebPushNotification) async -> WebPushResult {
        await withCheckedContinuation { continuation in
            Task { await submit(notification) { continuation.resume(returning: $0) } }
        }
    }

    /// Checks the endpoint's host and accepts the notification into the in-flight window (suspending while it is
    /// full); returns once it is accepted, its encryption queued on a worker (or done, with `encryptsOnWorkers`
    /// false). `onResult` fires exactly once with the final result: on a curl loop thread, an encryption worker (an
    /// encryption failure), or the caller's thread (a refused host, shutdown).
    package func submit(_ notification: WebPushNotification, onResult: @escaping @Sendable (WebPushResult) -> Void)
        async
    {
        let endpoint = notification.subscription.endpoint
        // The key of the destination's share of the window: the push service (allow-list pattern), or with open
        // endpoints the host itself, admitted by the port rule and the distinct-host cap.
        let shareKey: String
        if let open = configuration.openEndpoints {
            let host = WebPushOpenEndpoints.hostKey(endpoint)
            guard open.allowsPort(of: endpoint) else {
                ledger.withState { $0.counters.refusedDestinations += 1 }
                onResult(.failure(.hostNotAllowed(host)))
                return
            }
            let now = MonotonicClock.seconds()
            guard ledger.withState({ $0.hosts.admit(host, now: now) }) else {
                ledger.withState { $0.counters.refusedDestinations += 1 }
                onResult(.failure(.tooManyHosts(host)))
                return
            }
            shareKey = host
        } else {
            guard let service = configuration.allowedHosts.pattern(for: endpoint) else {
                ledger.withState { $0.counters.refusedDestinations += 1 }
                onResult(
                    .failure(
                        .hostNotAllowed(endpoint.port == 443 ? endpoint.host : "\(endpoint.host):\(endpoint.port)")))
                return
            }
            shareKey = service.description
        }
        // A slot of the service's share first: a slow service makes only its own notifications wait. The slot is
        // taken before encrypting, so the window also bounds the messages waiting for a worker.
        guard
            let job = await ledger.admit(
                key: shareKey, cancelledBy: notification.retries,
                {
                    Job(id: $0, notification: notification, onResult: onResult)
                })
        else {
            // Its run was cancelled while it waited for room in the window (never sent), or the sender is stopping.
            if notification.retries?.isCancelled == true { return onResult(.failure(.cancelled(attempts: 0))) }
            ledger.withState { $0.counters.shutdownFailures += 1 }
            onResult(.failure(.shutdown))
            return
        }
        // Cancelled while it waited for room in the window: never sent.
        if notification.retries?.isCancelled == true { return finish(job, .failure(.cancelled(attempts: 0))) }
        guard let workers else {
            if encrypt(job) { send(job) }
            return
        }
        // The worker sends what it encrypted in groups (`WebPushEncryptionWorkers.handOffBatch`), so the curl loop
        // takes several requests per turn.
        workers.prepare(on: workers.worker(for: endpoint.text)) { [self] in encrypt(job) ? { self.send(job) } : nil }
    }

    /// A snapshot of the counters.
    package func stats() -> WebPushSenderStats {
        ledger.stats({ $0.counters }, client: client)
    }

    /// Push services refusing the VAPID credentials right now (`401`/`403` since their last accepted message),
    /// oldest first; empty when none does. For `/ready` and the console.
    package var credentialProblems: [WebPushCredentialProblem] { ledger.withState { $0.credentials.list } }

    /// Stops accepting notifications, lets in-flight ones finish for up to `gracePeriod`, then gives
    /// every unfinished one `.failure(.shutdown)`, closes the connections and returns those notifications.
    package func shutdown(gracePeriod: Duration = .seconds(10)) async -> [WebPushNotification] {
        let left = await ledger.shutdown(gracePeriod: gracePeriod, count: { $0.counters.shutdownFailures += $1 }) {
            job in
            job.onResult(.failure(.shutdown))
        }
        await client.shutdown()
        return left.map(\.notification)
    }

    // MARK: - Steps of one notification

    /// Encrypts the admitted job's message into `job.exchange`. - Returns: whether it is ready to send: false when
    /// shutdown or its run's cancellation reported it while it waited for the worker, or the encryption failed
    /// (then reported here).
    private func encrypt(_ job: Job) -> Bool {
        guard ledger.isPending(job.id) else { return false }
        if job.notification.retries?.isCancelled == true {
            finish(job, .failure(.cancelled(attempts: 0)))
            return false
        }
        let notification = job.notification
        // What `WebPushRequest` assembles, with the header lines shared between consecutive requests.
        let authorization: VAPIDAuthorization
        let encrypted: WebPushEncryptedBody
        do throws(WebPushEncryptionError) {
            do throws(CryptoError) {
                authorization = try vapid.authorization(audience: notification.subscription.audience)
            } catch {
                throw .crypto(error)
            }
            encrypted = try WebPushEncryption.encrypt(notification.message.payload, for: notification.subscription.keys)
        } catch {
            finish(job, .failure(.encryption(error)))
            return false
        }
        job.exchange = HTTPExchange(
            url: notification.subscription.endpoint, headers: headerLines(notification.message, authorization),
            body: encrypted.body)
        return true
    }

    /// The header lines for `message` sent with `authorization`: the last request's when they are made from the
    /// same, else new ones that the next requests reuse.
    private func headerLines(_ message: WebPushMessage, _ authorization: VAPIDAuthorization) -> [String] {
        let source = HeaderSource(
            ttl: message.ttl, urgency: message.urgency, topic: message.topic, authorization: authorization)
        if let lines = lastHeaderLines.withLock({ $0?.source == source ? $0?.lines : nil }) { return lines }
        let lines = WebPushRequest.headers(message: message, authorization: authorization).map(\.description)
        lastHeaderLines.withLock { $0 = (source, lines) }
        return lines
    }

    private func send(_ job: Job) {
        guard let exchange = job.exchange else { return }  // set before the first send, never cleared
        job.attempts += 1
        client.submit(exchange) { [self] result in answered(job, result) }
    }

    private func decide(_ job: Job, retryAfter: Int?) -> WebPushRetryPolicy.Decision {
        configuration.retryPolicy.decide(
            attempts: job.attempts, elapsed: job.delaySpent, retryAfter: retryAfter,
            secondsLeft: job.notification.deadline.secondsLeft(at: configuration.clock()))
    }

    private func answered(_ job: Job, _ result: HTTPExchangeResult) {
        switch result {
        case .failure(let error):
            if error.kind == .shutdown { return finish(job, .failure(.shutdown)) }
            let retryable = error.kind == .connection || error.kind == .timeout
            switch retryable ? decide(job, retryAfter: nil) : .finish {
            case .retry(let delay): return retry(job, after: delay)
            case .expire: return finish(job, .failure(.expired(attempts: job.attempts)))
            case .finish: break
            }
            if error.kind != .refusedDestination {
                configuration.logger.warning("Web Push request failed", ["error": error.description])
            }
            finish(job, .failure(.transport(error, attempts: job.attempts)))
        case .success(let response):
            let now = VAPIDAuthorizer.unixSeconds(configuration.clock())
            let outcome = WebPushOutcome(
                status: response.status, retryAfter: response.retryAfter, body: response.body, now: now)
            if case .retry(_, let after) = outcome {
                switch decide(job, retryAfter: after) {
                case .retry(let delay): return retry(job, after: delay)
                case .expire: return finish(job, .failure(.expired(attempts: job.attempts)))
                case .finish: break
                }
            }
            if case .configurationError(let status, let detail) = outcome {
                configuration.logger.warning(
                    "push service refused the request",
                    [
                        "status": String(status), "host": job.notification.subscription.endpoint.host, "detail": detail,
                    ])
            }
            finish(job, .response(outcome, attempts: job.attempts))
        }
    }

    /// Re-sends after `delay` (a timer, no sleeping thread), unless the notification's run is cancelled first: then
    /// it ends `.cancelled` at once, its window slot freed.
    private func retry(_ job: Job, after delay: Double) {
        let ticket: Int?
        if let scope = job.notification.retries {
            let cancelled: @Sendable () -> Void = { [self] in finish(job, .failure(.cancelled(attempts: job.attempts)))
            }
            guard let waiting = scope.wait(onCancel: cancelled) else { return cancelled() }
            ticket = waiting
        } else {
            ticket = nil
        }
        job.delaySpent += delay
        ledger.withState { $0.counters.retries += 1 }
        MonotonicTimer.schedule(after: .seconds(delay.isFinite ? min(max(delay, 0), 86_400) : 0)) { [self] in
            // The scope's handler reported it (cancelled), or shutdown did: nothing to send.
            if let ticket, let scope = job.notification.retries, !scope.resume(ticket) { return }
            guard ledger.isPending(job.id) else { return }
            send(job)
        }
    }

    private func finish(_ job: Job, _ result: WebPushResult) {
        let now = configuration.clock()
        let claimed = ledger.claim(job.id) { state in
            switch result {
            case .response(let outcome, _):
                state.credentials.record(outcome, host: job.notification.subscription.endpoint.host, now: now)
                switch outcome {
                case .accepted(let status):
                    state.counters.accepted += 1
                    state.counters.responsesByStatus[status, default: 0] += 1
                case .subscriptionGone(let status):
                    state.counters.subscriptionsGone += 1
                    state.counters.responsesByStatus[status, default: 0] += 1
                case .payloadTooLarge: state.counters.responsesByStatus[413, default: 0] += 1
                case .retry(let status, _), .configurationError(let status, _), .unknown(let status):
                    state.counters.responsesByStatus[status, default: 0] += 1
                }
            case .failure(.transport(let error, _)) where error.kind == .refusedDestination:
                state.counters.refusedDestinations += 1
            case .failure(.transport): state.counters.transportFailures += 1
            case .failure(.shutdown): state.counters.shutdownFailures += 1
            case .failure(.hostNotAllowed), .failure(.tooManyHosts): state.counters.refusedDestinations += 1
            case .failure(.encryption): state.counters.encryptionFailures += 1
            case .failure(.cancelled): state.counters.cancelled += 1
            case .failure(.expired): state.counters.expired += 1
            }
        }
        guard claimed else { return }  // shutdown reported it already
        job.onResult(result)
    }
}
