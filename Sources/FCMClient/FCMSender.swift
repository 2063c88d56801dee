import Clocks
import Foundation
import HTTPClient
import Locking
import Logging

/// Sends FCM HTTP v1 `messages:send` requests for one service account over HTTP/2 (libcurl, multiplexed on a
/// small pool of connections), with the OAuth2 access token managed for it, FCM's retry rules and backpressure.
///
/// ```swift
/// let sender = try FCMSender(account: try ServiceAccount(contentsOfFile: path))
/// for token in tokens {   // suspends while the in-flight window is full
///     await sender.submit(FCMRequest(token: token, message: template)) { result in record(result) }
/// }
/// let unanswered = await sender.shutdown(gracePeriod: .seconds(10))
/// ```
///
/// Per request: take the access token (`AccessTokenManager`: one fetch in flight, the others woken by it; when the
/// token endpoint gives no answer the request waits and asks again per `FCMRetryPolicy`, a refusal fails it), POST,
/// classify (`FCMResponse.classify`); a `401` drops that token and re-sends once with a fresh one; `retry` answers
/// and transport failures are re-sent per `FCMRetryPolicy`, after `Retry-After` when FCM sent one (a timer: a real
/// deadline). A retry is never scheduled past the request's `deadline` (it ends `.expired` at once), and cancelling
/// the request's `RetryScope` ends a waiting retry at once (`.cancelled`): retries belong to their publish run.
/// Result callbacks run on the curl loop threads (or a timer thread): keep them short and never block in them.
package final class FCMSender: Sendable {
    /// One accepted request; owned by whichever thread handles its current step (steps never overlap).
    private final class Job: @unchecked Sendable {
        // @unchecked Sendable: the mutable fields are touched by one step at a time (submit, then the completion
        // of each exchange or timer that the previous step scheduled), never concurrently.
        let id: Int
        let request: FCMRequest
        let body: [UInt8]
        let onResult: @Sendable (FCMResult) -> Void
        var attempts = 0
        var delaySpent = 0.0
        var tokenRefreshed = false
        var generation = 0
        /// Times no access token could be had for lack of an answer (not a refusal).
        var tokenFailures = 0

        init(id: Int, request: FCMRequest, onResult: @escaping @Sendable (FCMResult) -> Void) {
            self.id = id
            self.request = request
            self.body = request.message.body(token: request.token)
            self.onResult = onResult
        }
    }

    /// What the sender counts and tracks, under the ledger's lock with its pending jobs.
    private struct State {
        var counters = FCMSenderStats()
        var auth = FCMSendAuthTracker()
        /// When the current run of `401`s began (for `/ready`), cleared by an accepted message.
        var firstRejection: Date?
        var random: UInt64 = UInt64.random(in: 1...UInt64.max)
    }

    package let account: ServiceAccount
    package let configuration: FCMSenderConfiguration
    /// The project messages go to: `configuration.projectID`, else the account's `project_id`.
    package let projectID: String
    private let client: HTTPExchangeClient
    private let tokens: AccessTokenManager
    private let ledger: SenderLedger<Job, State>
    private let sendURL: HTTPURL
    /// The header lines of the current access token (`headerLines(for:)`).
    private let headerCache = Locked<HeaderLines?>(nil)

    private struct HeaderLines: Sendable {
        var generation: Int
        var value: String
        var lines: [String]
    }

    /// - Throws: `FCMSenderError` when the base URL is not an https URL or libcurl cannot be set up.
    package init(account: ServiceAccount, configuration: FCMSenderConfiguration = FCMSenderConfiguration())
        throws(FCMSenderError)
    {
        self.account = account
        self.configuration = configuration
        let projectID = configuration.projectID ?? account.projectID
        guard ServiceAccount.isValidProjectID(projectID) else { throw .invalidProjectID(projectID) }
        self.projectID = projectID
        var base = configuration.baseURL
        while base.hasSuffix("/") { base.removeLast() }
        do {
            sendURL = try HTTPURL(base + "/v1/projects/\(projectID)/messages:send")
        } catch {
            throw .invalidBaseURL(error.description)
        }
        guard sendURL.scheme == "https" else { throw .invalidBaseURL("must be an https URL") }
        let tokenURL: HTTPURL
        do {
            tokenURL = try HTTPURL(account.tokenURI)
        } catch {
            throw .invalidTokenURI(error.description)
        }
        let exchangeConfiguration = HTTPExchangeConfiguration(
            name: "fcm", connections: configuration.connections, maxConnectionsPerHost: 1,
            streamsPerConnection: configuration.streamsPerConnection, http2: true, httpsOnly: true,
            caFile: configuration.caFile, policy: nil, timeout: .seconds(configuration.requestTimeout),
            connectTimeout: .seconds(configuration.connectTimeout))
        let client: HTTPExchangeClient
        do {
            client = try HTTPExchangeClient(configuration: exchangeConfiguration)
        } catch {
            throw .curl(error)
        }
        self.client = client
        ledger = SenderLedger(capacity: configuration.connections * configuration.streamsPerConnection, state: State())
        let logger = configuration.logger
        tokens = AccessTokenManager(account: account, policy: configuration.tokenPolicy, clock: configuration.clock) {
            request, done in
            let exchange = HTTPExchange(
                url: tokenURL,
                headers: ["Content-Type: \(AccessTokenRequest.contentType)", "Accept: application/json"],
                body: request.body)
            client.submit(exchange) { result in
                switch result {
                case .success(let response):
                    do throws(AccessTokenError) {
                        done(.success(try AccessToken.parse(status: response.status, body: response.body)))
                    } catch {
                        logger.warning("FCM access token refused", ["error": error.description])
                        done(.failure(error))
                    }
                case .failure(let error):
                    done(.failure(.transport(error.description)))
                }
            }
        }
    }

    /// Sends one message and waits for its final result (retries included).
    package func send(_ request: FCMRequest) async -> FCMResult {
        await withCheckedContinuation { continuation in
            Task { await submit(request) { continuation.resume(returning: $0) } }
        }
    }

    /// Accepts `request` into the in-flight window, suspending while it is full; returns once it is accepted.
    /// `onResult` fires exactly once with the final result: on a curl loop or timer thread, or on the caller's
    /// thread (`.shutdown`) when the sender is stopping.
    package func submit(_ request: FCMRequest, onResult: @escaping @Sendable (FCMResult) -> Void) async {
        guard
            let job = await ledger.admit(
                cancelledBy: request.retries,
                {
                    Job(id: $0, request: request, onResult: onResult)
                })
        else {
            // Its run was cancelled while it waited for room in the window (never sent), or the sender is stopping.
            if request.retries?.isCancelled == true { return onResult(.failure(.cancelled(attempts: 0))) }
            ledger.withState { $0.counters.shutdownFailures += 1 }
            onResult(.failure(.shutdown))
            return
        }
        // Cancelled while it waited for room in the window: never sent.
        if request.retries?.isCancelled == true { return finish(job, .failure(.cancelled(attempts: 0))) }
        attempt(job)
    }

    /// The authentication problem for `/ready`: the token endpoint refuses the account, FCM rejected
    /// consecutive fresh tokens, or FCM's last answers were `PERMISSION_DENIED`, `THIRD_PARTY_AUTH_ERROR`,
    /// `SENDER_ID_MISMATCH` (before any message was accepted) or a `404` for the project. Nil when sending works
    /// (or has not been tried); a send-side problem lasts until FCM accepts a message.
    package var authProblem: FCMAuthProblem? {
        let now = configuration.clock()
        if let (problem, failures) = tokens.authProblem {
            switch problem {
            case .refused(let error, let since):
                let age = max(0, MonotonicClock.seconds() - since)
                return FCMAuthProblem(
                    kind: .accessTokenRefused, detail: error.description,
                    since: now.addingTimeInterval(-age), count: failures)
            case .rejectedByFCM(let count):
                let since = ledger.withState { $0.firstRejection } ?? now
                return FCMAuthProblem(
                    kind: .accessTokenRejected,
                    detail: "FCM answered 401 UNAUTHENTICATED to \(count) fresh access tokens in a row",
                    since: since, count: count)
            }
        }
        return ledger.withState { $0.auth.problem }
    }

    /// A snapshot of the counters.
    package func stats() -> FCMSenderStats {
        var stats = ledger.stats({ $0.counters }, client: client)
        stats.tokenFetches = tokens.fetchCount
        if let token = tokens.current {
            let now = MonotonicClock.seconds()
            stats.accessTokenAge = max(0, now - token.obtainedAt)
            stats.accessTokenExpiresIn = token.expiresAt - now
        }
        return stats
    }

    /// Stops accepting requests, lets in-flight ones finish for up to `gracePeriod`, then gives every
    /// unfinished one `.failure(.shutdown)` through its callback, closes the connections, and returns those
    /// requests (unsent, waiting for a retry, or sent but unanswered) so the caller can re-queue them.
    package func shutdown(gracePeriod: Duration = .seconds(10)) async -> [FCMRequest] {
        let left = await ledger.shutdown(gracePeriod: gracePeriod, count: { $0.counters.shutdownFailures += $1 }) {
            job in
            job.onResult(.failure(.shutdown))
        }
        await client.shutdown()
        return left.map(\.request)
    }

    // MARK: - Steps of one request

    /// Takes a token (maybe after the fetch in flight) and sends.
    private func attempt(_ job: Job, rejecting generation: Int? = nil) {
        tokens.withToken(rejecting: generation) { [self] token in
            switch token {
            case .failure(let error) where !error.isConfigurationError:
                // The token endpoint had a bad moment (5xx, no answer): wait and ask again, like a send that got no
                // answer, rather than fail the message. A refusal needs an operator and fails at once.
                job.tokenFailures += 1
                let info = FCMErrorInfo(httpStatus: 0, status: nil, errorCode: nil, message: error.description)
                switch decide(.retry(info, retryAfter: nil), attempts: job.tokenFailures, job) {
                case .retry(let after): retry(job, after: after)
                case .expire: finish(job, .failure(.expired(attempts: job.attempts)))
                case .finish: finish(job, .failure(.accessToken(error)))
                }
            case .failure(let error):
                finish(job, .failure(.accessToken(error)))
            case .success(let token):
                job.generation = token.generation
                job.attempts += 1
                let exchange = HTTPExchange(url: sendURL, headers: headerLines(for: token), body: job.body)
                client.submit(exchange) { [self] result in answered(job, result) }
            }
        }
    }

    /// The request's header lines with `token`, built once per access token rather than once per message.
    private func headerLines(for token: AccessTokenState.Token) -> [String] {
        if let cached = headerCache.withLock({ $0 }), cached.generation == token.generation,
            cached.value == token.value
        {
            return cached.lines
        }
        let lines = [
            "Authorization: Bearer \(token.value)", "Content-Type: application/json", "Accept: application/json",
        ]
        headerCache.withLock { $0 = HeaderLines(generation: token.generation, value: token.value, lines: lines) }
        return lines
    }

    private func answered(_ job: Job, _ result: HTTPExchangeResult) {
        var classified: FCMSendResult
        switch result {
        case .failure(let error):
            if error.kind == .shutdown {
                finish(job, .failure(.shutdown))
                return
            }
            // Connection failures and timeouts are retried like `UNAVAILABLE` (firebase-admin does the same).
            let retryable = error.kind == .connection || error.kind == .timeout
            let info = FCMErrorInfo(httpStatus: 0, status: nil, errorCode: nil, message: error.message)
            let decision = retryable ? decide(.retry(info, retryAfter: nil), job) : .finish
            switch decision {
            case .retry(let after):
                retry(job, after: after)
            case .expire:
                finish(job, .failure(.expired(attempts: job.attempts)))
            case .finish:
                configuration.logger.warning("FCM request failed", ["error": error.description])
                finish(job, .failure(.transport(error, attempts: job.attempts)))
            }
            return
        case .success(let response):
            classified = FCMResponse.classify(
                status: response.status, retryAfter: response.retryAfter, body: response.body,
                now: AccessTokenManager.unixSeconds(configuration.clock()))
        }
        switch classified {
        case .accessTokenRejected where !job.tokenRefreshed:
            job.tokenRefreshed = true
            rejected()
            attempt(job, rejecting: job.generation)
            return
        case .accessTokenRejected:
            rejected()
        case .senderMismatch(let info) where !ledger.withState({ $0.auth.hasSent }):
            // FCM's table says "drop the device", but while FCM has accepted nothing from this sender a mismatch
            // more likely means the configured project is wrong: dropping would wipe every Android device. Kept
            // and reported (`FCMAuthProblem.senderIDMismatch`); once a message got through, mismatches are dead
            // tokens again.
            classified = .authError(info)
        case .sent:
            tokens.accepted(generation: job.generation)
        default:
            break
        }
        switch decide(classified, job) {
        case .retry(let after): retry(job, after: after)
        case .expire: finish(job, .failure(.expired(attempts: job.attempts)))
        case .finish: finish(job, .response(classified, attempts: job.attempts))
        }
    }

    private func rejected() {
        let now = configuration.clock()
        ledger.withState { state in
            state.counters.accessTokenRejections += 1
            if state.firstRejection == nil { state.firstRejection = now }
        }
    }

    private func decide(_ result: FCMSendResult, _ job: Job) -> FCMRetryPolicy.Decision {
        decide(result, attempts: job.attempts, job)
    }

    private func decide(_ result: FCMSendResult, attempts: Int, _ job: Job) -> FCMRetryPolicy.Decision {
        let random = ledger.withState { state -> Double in
            // xorshift64*: jitter needs no cryptographic randomness.
            state.random ^= state.random >> 12
            state.random ^= state.random << 25
            state.random ^= state.random >> 27
            return Double((state.random &* 2_685_821_657_736_338_717) >> 11) / Double(1 << 53)
        }
        return configuration.retryPolicy.decide(
            result, attempts: attempts, elapsed: job.delaySpent, random: random,
            secondsLeft: job.request.deadline.secondsLeft(at: configuration.clock()))
    }

    /// Re-sends after `seconds` (a timer: the token is taken when it fires, so a long delay cannot outlive it),
    /// unless the request's run is cancelled first: then it ends `.cancelled` at once, its window slot freed.
    private func retry(_ job: Job, after seconds: Double) {
        let ticket: Int?
        if let scope = job.request.retries {
            let cancelled: @Sendable () -> Void = { [self] in finish(job, .failure(.cancelled(attempts: job.attempts)))
            }
            guard let waiting = scope.wait(onCancel: cancelled) else { return cancelled() }
            ticket = waiting
        } else {
            ticket = nil
        }
        job.delaySpent += seconds
        ledger.withState { $0.counters.retries += 1 }
        MonotonicTimer.schedule(after: .seconds(seconds.isFinite ? min(max(seconds, 0), 86_400) : 0)) { [self] in
            // The scope's handler reported it (cancelled), or shutdown did: nothing to send.
            if let ticket, let scope = job.request.retries, !scope.resume(ticket) { return }
            guard ledger.isPending(job.id) else { return }
            attempt(job)
        }
    }

    private func finish(_ job: Job, _ result: FCMResult) {
        let now = configuration.clock()
        let claimed = ledger.claim(job.id) { state in
            switch result {
            case .response(let answer, _):
                state.auth.record(answer, now: now)
                if case .sent = answer { state.firstRejection = nil }
                switch answer {
                case .sent: state.counters.sent += 1
                case .invalidToken, .senderMismatch: state.counters.invalidTokens += 1
                default: break
                }
                if let status = Self.status(of: answer) { state.counters.responsesByStatus[status, default: 0] += 1 }
            case .failure(.transport): state.counters.transportFailures += 1
            case .failure(.accessToken): state.counters.accessTokenFailures += 1
            case .failure(.shutdown): state.counters.shutdownFailures += 1
            case .failure(.cancelled): state.counters.cancelled += 1
            case .failure(.expired): state.counters.expired += 1
            }
        }
        guard claimed else { return }  // shutdown reported it already
        job.onResult(result)
    }

    private static func status(of result: FCMSendResult) -> Int? {
        switch result {
        case .sent: return 200
        case .invalidToken(let info), .senderMismatch(let info), .retry(let info, _), .accessTokenRejected(let info),
            .authError(let info), .invalidMessage(let info), .configuration(let info):
            return info.httpStatus
        case .unknown: return nil
        }
    }
}

/// Why an `FCMSender` could not be created.
package enum FCMSenderError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidBaseURL(String)
    case invalidTokenURI(String)
    /// The configured project id has bytes a project id cannot have.
    case invalidProjectID(String)
    case curl(CurlError)

    package var description: String {
        switch self {
        case .invalidBaseURL(let reason): return "the FCM base URL \(reason)"
        case .invalidTokenURI(let reason): return "the service account's token_uri \(reason)"
        case .invalidProjectID: return "the project id must be lower-case letters, digits, '-', '.' and ':'"
        case .curl(let error): return "libcurl: \(error)"
        }
    }
}
