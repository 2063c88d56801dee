import Foundation
import Locking

/// The scheduling of one APNs connection slot as a pure state machine (no curl, no clock, no sockets, no token
/// manager): which job starts next, what an ended stream means for its job, retries and their delays, and when
/// a job is final. Events come in as method calls with the current monotonic time; what the transport must do
/// comes back as `Action`s. `APNsConnectionDriver` runs it on the connection's curl loop thread; the rules are
/// tested without sockets in `APNsConnectionStateMachineTests`.
///
/// The stream bookkeeping (answered when the `200` header block is complete, cold-connection gate) is
/// `APNsStreamLedger`'s; this type adds the jobs: the queue of jobs ready to start, the delayed retries, which job
/// is on which stream, and the retry policy's decisions.
struct APNsConnectionStateMachine {
    /// How curl ended one stream's transfer.
    struct Ending {
        /// The response status curl parsed (0: none arrived).
        var status: Int
        var apnsID: String?
        var apnsUniqueID: String?
        /// The error body's fields (complete non-200 responses only).
        var reason: APNsReason?
        var timestamp: Date?
        /// Why the transfer failed; nil when curl completed it with a response.
        var failure: APNsTransportError?
    }

    /// What the transport must do, in order.
    enum Action {
        /// Report the job's final result; its window slot is free.
        case finish(APNsJob, APNsResult)
        /// A job is being sent again (the pool counts retries).
        case countRetry
        /// APNs answered `TooManyProviderTokenUpdates` (the pool counts them).
        case countTokenUpdateRejected
        /// `ExpiredProviderToken`: get a fresh token for the job (`tokenAfterExpiry(generation: job.tokenGeneration)`)
        /// and answer with `tokenRefreshed`.
        case refreshToken(APNsJob)
        /// `TooManyProviderTokenUpdates`: ask the token manager whether another token exists
        /// (`tokenAfterUpdateRejected(generation: job.tokenGeneration)`) and answer with `rejectedTokenResolved`.
        case resolveRejectedToken(APNsJob)
        /// A transfer failed in a way retrying cannot fix (TLS, bad URL): worth a warning.
        case warnTransferFailed(APNsTransportError)
        /// APNs rejected the credentials: worth a warning (every request with them fails alike).
        case warnCredentialsRejected(APNsReason)
        /// A request reached the request timeout, the last resort for a peer that stopped answering: where it and
        /// its connection stood, and how many times it was sent.
        case warnRequestTimedOut(APNsStreamLedger.Diagnosis, attempts: Int)
    }

    private let retryPolicy: APNsRetryPolicy
    /// After this long without answers the connection may be gone (curl replaces it after its idle limit; APNs may
    /// have sent GOAWAY for idleness), so it is treated as cold: one round trip, then full speed.
    private let coldAfterIdleNanos: UInt64
    private var ledger = APNsStreamLedger()
    private var ready = APNsJobQueue()
    private var delayed: [APNsJob] = []
    /// The job each started stream carries, until it is settled.
    private var onStream: [Int: APNsJob] = [:]
    /// Streams whose `200` header block completed during the current `curl_multi_perform`.
    private var answeredEarly: [(stream: Int, response: APNsResponse)] = []
    /// The last perform's `answeredEarly` being settled, oldest last: `nextAnsweredEarly` pops each, moving it out
    /// without a copy.
    private var settling: [(stream: Int, response: APNsResponse)] = []
    /// Monotonic time of the last answer.
    private var lastAnswerAt: UInt64 = 0
    private var random: UInt64

    /// - Parameter seed: the retry jitter's generator state (any non-zero value).
    init(retryPolicy: APNsRetryPolicy, coldAfterIdleNanos: UInt64, seed: UInt64) {
        self.retryPolicy = retryPolicy
        self.coldAfterIdleNanos = coldAfterIdleNanos
        self.random = seed == 0 ? 1 : seed
    }

    /// Whether the connection has had a request accepted since it was last cold.
    var isWarm: Bool { ledger.warm }
    /// Jobs waiting to start at once.
    var readyCount: Int { ready.count }
    /// Jobs waiting for a retry delay.
    var delayedCount: Int { delayed.count }
    /// Streams started and not yet ended by curl.
    var streamsInFlight: Int { ledger.inFlight }

    // MARK: - Starting

    /// A new job, or a waiting one taking over a freed slot on this connection.
    mutating func enqueue(_ job: APNsJob) {
        ready.append(job)
    }

    /// Time passes: an idle warm connection goes cold, delayed retries that are due become ready, and those whose
    /// run was cancelled end `.cancelled` (the loop wakes at least once a second, `pollTimeout`).
    @discardableResult
    mutating func tick(now: UInt64) -> [Action] {
        if ledger.warm && now &- lastAnswerAt > coldAfterIdleNanos { ledger.goCold() }
        guard !delayed.isEmpty else { return [] }
        var remaining: [APNsJob] = []
        var actions: [Action] = []
        for job in delayed {
            if job.request.retries?.isCancelled == true {
                actions.append(.finish(job, .failure(.cancelled(attempts: job.attempts))))
            } else if job.notBefore <= now {
                ready.append(job)
            } else {
                remaining.append(job)
            }
        }
        delayed = remaining
        return actions
    }

    /// The next job to send, if the cold-connection gate lets one start. Answer with `started` or `startFailed`.
    mutating func nextToStart() -> APNsJob? {
        guard ledger.mayStart else { return nil }
        return ready.popFirst()
    }

    /// The job went out on `stream` (a transfer id unique among the streams in flight).
    mutating func started(_ job: APNsJob, stream: Int, now: UInt64) {
        ledger.started(stream)
        onStream[stream] = job
        job.attempts += 1
        if job.firstSentAt == 0 { job.firstSentAt = now }
    }

    /// The job could not be sent at all (no token, curl refused the handle).
    mutating func startFailed(_ job: APNsJob, _ failure: APNsFailure) -> [Action] {
        [.finish(job, .failure(failure))]
    }

    /// curl is about to send `stream` on the connection with local port `connection`. False: hold it back (curl
    /// aborts it unsent; `ended` then starts it again), because that connection has not answered yet and already
    /// carries its one request.
    mutating func sending(stream: Int, connection: Int) -> Bool {
        ledger.sending(stream, connection: connection)
    }

    // MARK: - Answers

    /// A final response's header block on `stream` is complete (called from inside `curl_multi_perform`). A `200`
    /// is final whatever curl reports later; it is reported by `nextAnsweredEarly`.
    mutating func headersComplete(stream: Int, status: Int, apnsID: String?, apnsUniqueID: String?) {
        guard ledger.headersComplete(stream, status: status) else { return }
        answeredEarly.append((stream, APNsResponse(status: 200, apnsID: apnsID, apnsUniqueID: apnsUniqueID)))
    }

    /// After `curl_multi_perform`: the next job whose `200` arrived in it, in arrival order, final without waiting
    /// for curl to end its transfer (which can come late, or as a failure when the connection is reset right
    /// after); nil once none is left. The caller reports it as `.finish(job, .response(response))` would be.
    ///
    /// One job at a time rather than an array of `Action`s: a fan-out settles nearly every notification here, and
    /// destroying each `.finish` with the array (the enum's destroy witness under `swift_arrayDestroy`) counted
    /// about 2,000 instructions per notification (callgrind, bench/publish/fanout_count.sh 5000).
    mutating func nextAnsweredEarly(now: UInt64) -> (job: APNsJob, response: APNsResponse)? {
        if settling.isEmpty {
            guard !answeredEarly.isEmpty else { return nil }
            swap(&settling, &answeredEarly)
            settling.reverse()
            lastAnswerAt = now
        }
        while var answered = settling.popLast() {
            guard let job = onStream.removeValue(forKey: answered.stream) else { continue }
            answered.response.attempts = job.attempts
            return (job, answered.response)
        }
        return nil
    }

    /// curl ended the transfer on `stream`.
    mutating func ended(stream: Int, _ ending: Ending, now: UInt64) -> [Action] {
        let completion: APNsStreamLedger.Completion
        if let failure = ending.failure {
            completion = .failed(failure.kind, status: ending.status)
        } else {
            completion = .completed(status: ending.status, tokenRejected: ending.reason?.isCredentialFault ?? false)
        }
        let diagnosis = ending.failure?.kind == .timeout ? ledger.diagnosis(of: stream) : nil
        let settlement = ledger.ended(stream, completion)
        // No job: it was settled when its 200 arrived (`.alreadySettled`).
        guard let job = onStream.removeValue(forKey: stream) else { return [] }

        var response: APNsResponse?
        var transportError: APNsTransportError?
        let outcome: APNsRetryPolicy.Outcome
        switch settlement {
        case .alreadySettled:
            return []
        case .heldBack:
            // Never sent: not an attempt, and it goes out as soon as the connection's probe is answered.
            job.attempts -= 1
            ready.append(job)
            return []
        case .answered(let status):
            response = APNsResponse(
                status: status, apnsID: ending.apnsID, apnsUniqueID: ending.apnsUniqueID,
                reason: ending.reason, timestamp: ending.timestamp)
            outcome = .response(status: status, reason: response?.reason)
            lastAnswerAt = now
        case .unanswered(let kind):
            var error = ending.failure ?? APNsTransportError(kind: kind, code: 0, message: "no response")
            error.kind = kind
            transportError = error
            outcome = .transport(kind)
        }

        var actions: [Action] = []
        if let diagnosis { actions.append(.warnRequestTimedOut(diagnosis, attempts: job.attempts)) }
        if case .response(_, .tooManyProviderTokenUpdates?) = outcome {
            job.tokenUpdateRejections += 1
            actions.append(.countTokenUpdateRejected)
        }
        let elapsed = Double(now &- job.firstSentAt) / 1e9
        let decision = retryPolicy.decide(
            outcome, attempts: job.attempts - job.tokenUpdateRejections, elapsed: elapsed,
            tokenRefreshed: job.tokenRefreshed, random: nextRandom(), tokenUpdateRejections: job.tokenUpdateRejections)
        switch decision {
        case .finish:
            if var response {
                response.attempts = job.attempts
                actions.append(.finish(job, .response(response)))
            } else if let transportError {
                if transportError.kind == .fatal { actions.append(.warnTransferFailed(transportError)) }
                actions.append(.finish(job, .failure(.transport(transportError, attempts: job.attempts))))
            }
        case .retry where job.request.retries?.isCancelled == true:
            actions.append(.finish(job, .failure(.cancelled(attempts: job.attempts))))
        case .retry(let after) where job.deadline.map { now &+ Self.nanos(after) > $0 } ?? false:
            // It would go out after the notification's deadline (`expiresAt`, `apns-expiration`): not scheduled.
            actions.append(.finish(job, .failure(.expired(attempts: job.attempts))))
        case .retry(let after):
            actions.append(.countRetry)
            schedule(job, after: after, now: now)
        case .refreshTokenAndRetry:
            job.tokenRefreshed = true
            actions.append(.refreshToken(job))
        case .retryAfterTokenUpdateRejected(let after):
            job.notBefore = now &+ Self.nanos(after)  // used if no other token turns up
            actions.append(.resolveRejectedToken(job))
        case .configurationFault:
            let reason = response?.reason ?? .unknown("")
            actions.append(.warnCredentialsRejected(reason))
            actions.append(.finish(job, .failure(.configuration(.rejected(status: ending.status, reason: reason)))))
        }
        return actions
    }

    /// The answer to `.refreshToken(job)`: the token to send with (set as `job.overrideToken`), or why there is none.
    mutating func tokenRefreshed(_ job: APNsJob, _ result: Result<ProviderTokenState.Token, APNsFailure>) -> [Action] {
        switch result {
        case .success(let token):
            job.overrideToken = token
            ready.append(job)
            return [.countRetry]
        case .failure(let failure):
            return [.finish(job, .failure(failure))]
        }
    }

    /// The answer to `.resolveRejectedToken(job)`: send at once with another token, or after the delay the retry
    /// policy chose (never signing within the refresh floor).
    mutating func rejectedTokenResolved(
        _ job: APNsJob, _ result: Result<ProviderTokenManager.UpdateRejectedOutcome, APNsFailure>
    ) -> [Action] {
        switch result {
        case .success(.retryNow(let token)):
            job.overrideToken = token
            ready.append(job)
            return [.countRetry]
        case .success(.retryLater):
            delayed.append(job)
            return [.countRetry]
        case .failure(let failure):
            return [.finish(job, .failure(failure))]
        }
    }

    // MARK: - Waiting and stopping

    /// How long the loop may wait for the network before the next turn, in milliseconds: 0 when a job can start
    /// now, else until the next delayed retry is due, at most a second. A job held back by the cold-connection
    /// gate does not count: the answer that opens the gate wakes the poll. Nor does one waiting for a transfer
    /// (`transferFree` false: every transfer is attached): the transfer that ends wakes it.
    func pollTimeout(now: UInt64, transferFree: Bool = true) -> Int32 {
        if transferFree && ready.count > 0 && ledger.mayStart { return 0 }
        var timeout: UInt64 = 1000
        for job in delayed {
            let millis = job.notBefore > now ? (job.notBefore - now + 999_999) / 1_000_000 : 0
            timeout = min(timeout, millis)
        }
        return Int32(timeout)
    }

    /// Every job not yet final (on a stream, ready, or delayed), in that order; the machine forgets them. The
    /// caller fails them with `.shutdown`.
    mutating func abort() -> [APNsJob] {
        var jobs = onStream.sorted { $0.key < $1.key }.map(\.value)
        while let job = ready.popFirst() { jobs.append(job) }
        jobs += delayed
        onStream = [:]
        delayed = []
        answeredEarly = []
        settling = []
        return jobs
    }

    private mutating func schedule(_ job: APNsJob, after seconds: Double, now: UInt64) {
        if seconds <= 0 {
            ready.append(job)
        } else {
            job.notBefore = now &+ Self.nanos(seconds)
            delayed.append(job)
        }
    }

    /// Seconds as nanoseconds; the retry policy caps its delays far below the range of `UInt64`.
    private static func nanos(_ seconds: Double) -> UInt64 {
        seconds > 0 && seconds < 1e9 ? UInt64(seconds * 1e9) : 0
    }

    private mutating func nextRandom() -> Double {
        // xorshift64*: jitter needs no cryptographic randomness, and SystemRandomNumberGenerator costs a syscall.
        random ^= random >> 12
        random ^= random << 25
        random ^= random >> 27
        return Double((random &* 2_685_821_657_736_338_717) >> 11) / Double(1 << 53)
    }
}
