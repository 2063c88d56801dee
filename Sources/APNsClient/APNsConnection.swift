import Clocks
import Locking
import CLibCurl
import Dispatch
import Foundation
import HTTPClient
import Logging
import Synchronization

/// One HTTP/2 connection slot: a curl multi limited to one connection, driven by its own thread.
///
/// Why one multi per connection (not one multi with `MAX_HOST_CONNECTIONS = n`): libcurl's per-wake-up cost grows
/// with the handles on a multi (~0.7 ms per `curl_multi_perform` at 1000 handles, docs/BENCHMARKS.md), a
/// connection with a known stream budget is what APNs' per-connection `MAX_CONCURRENT_STREAMS` is about, and
/// `MAX_HOST_CONNECTIONS = 1` stops curl from opening extra connections while APNs allows only one stream before
/// the first authenticated request. Each thread runs `curl_multi_poll`; other threads reach it only through the
/// locked inbox plus `curl_multi_wakeup`.
///
/// @unchecked Sendable: the curl handles, transfers and job queues are touched only by the loop thread once it has
/// started; `inbox` and `exit` are `Locked`, counters are atomics, and `curl_multi_wakeup` is documented as
/// callable from any thread.
final class APNsConnection: @unchecked Sendable {
    private struct Inbox {
        var jobs: [APNsJob] = []
        var stop = false
        var stopped = false
    }

    private struct Exit {
        var unanswered: [APNsRequest]?
        var waiters: [CheckedContinuation<[APNsRequest], Never>] = []
    }

    let index: Int
    private let pool: APNsPool
    private let multi: UnsafeMutableRawPointer
    private let environment: APNsEnvironment
    private let configuration: APNsClientConfiguration
    private let logger: Logger
    private let inbox = Locked(Inbox())
    private let exit = Locked(Exit())
    /// Transfers attached to the multi.
    let attached = Atomic<Int>(0)
    /// TCP/TLS connections curl opened for this slot.
    let opened = Atomic<Int>(0)

    // Loop-thread state.
    private var transfers: [APNsTransfer] = []
    private var idle: [APNsTransfer] = []
    private var ready: [APNsJob] = []
    private var delayed: [APNsJob] = []
    private var random: UInt64
    /// Which streams are in flight, answered or ended, and whether the connection is warm (see the type).
    private var ledger = APNsStreamLedger()
    /// Transfers whose `200` header block completed during the current `curl_multi_perform`.
    private var answeredEarly: [APNsTransfer] = []
    private var nextTransferID = 0
    /// Monotonic time of the last answer.
    private var lastAnswerAt: UInt64 = 0
    /// After this long without answers the connection may be gone (curl replaces it after `maxIdleSeconds`; the
    /// server may have sent GOAWAY for idleness), so it is treated as cold: one round trip, then full speed.
    private var coldAfterIdleNanos: UInt64 { UInt64(min(configuration.maxIdleSeconds, 60)) * 1_000_000_000 }

    init(index: Int, pool: APNsPool, environment: APNsEnvironment, configuration: APNsClientConfiguration,
         logger: Logger) throws(CurlError) {
        guard let multi = curl_multi_init() else {
            throw CurlError(code: -1, call: "curl_multi_init", message: "out of memory")
        }
        self.index = index
        self.pool = pool
        self.multi = multi
        self.environment = environment
        self.configuration = configuration
        self.logger = logger
        self.random = UInt64.random(in: 1...UInt64.max)
        do {
            try curlMultiCheck(ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX), "PIPELINING")
            try curlMultiCheck(ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1), "MAX_HOST_CONNECTIONS")
            try curlMultiCheck(
                ccurl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.streamsPerConnection),
                "MAX_CONCURRENT_STREAMS")
        } catch {
            curl_multi_cleanup(multi)
            throw error
        }
    }

    /// Starts the loop thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "apns-conn-\(index)"
        thread.start()
    }

    /// Hands a job to the loop. Returns false once the connection has stopped.
    func enqueue(_ job: APNsJob) -> Bool {
        inbox.withLock { inbox -> Bool in
            if inbox.stop || inbox.stopped { return false }
            let wasEmpty = inbox.jobs.isEmpty
            inbox.jobs.append(job)
            // The loop drains the whole inbox each turn, so only the first job after a drain needs to wake it.
            // The wake-up happens under the lock: the loop marks itself stopped under the same lock before
            // `curl_multi_cleanup`, so the multi is still alive here.
            if wasEmpty { curl_multi_wakeup(multi) }
            return true
        }
    }

    /// Aborts whatever is still running and stops the thread; returns the requests that got no final answer.
    func stop() async -> [APNsRequest] {
        inbox.withLock { inbox in
            // Under the lock for the same reason as in `enqueue`: the multi is freed only after `stopped` is set.
            if !inbox.stop && !inbox.stopped { curl_multi_wakeup(multi) }
            inbox.stop = true
        }
        return await withCheckedContinuation { continuation in
            let done = exit.withLock { exit -> [APNsRequest]? in
                if let unanswered = exit.unanswered { return unanswered }
                exit.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    // MARK: - Loop thread

    private func run() {
        while true {
            let (incoming, stop) = inbox.withLock { inbox -> ([APNsJob], Bool) in
                let jobs = inbox.jobs
                inbox.jobs = []
                if inbox.stop { inbox.stopped = true }
                return (jobs, inbox.stop)
            }
            ready.append(contentsOf: incoming)
            if stop { break }

            let now = MonotonicClock.now()
            if ledger.warm && now &- lastAnswerAt > coldAfterIdleNanos { ledger.goCold() }
            if !delayed.isEmpty { promoteDueRetries(now: now) }
            if !ready.isEmpty { startReady() }

            var running: Int32 = 0
            let code = curl_multi_perform(multi, &running)
            if code != CURLM_OK {
                logger.error("curl_multi_perform failed", ["code": String(code.rawValue)])
            }
            settleAnsweredEarly()
            collectFinished()
            // Immediate retries or handed-over jobs: start them before sleeping, unless the cold-connection gate
            // holds them back (then the answer that opens the gate wakes the poll).
            if !ready.isEmpty && ledger.mayStart { continue }

            var timeout: Int32 = 1000
            if let next = delayed.map(\.notBefore).min() {
                let now = MonotonicClock.now()
                let millis = next > now ? (next - now + 999_999) / 1_000_000 : 0
                timeout = Int32(min(UInt64(timeout), millis))
            }
            _ = curl_multi_poll(multi, nil, 0, timeout, nil)
        }
        let unanswered = abortEverything()
        let waiters = exit.withLock { exit -> [CheckedContinuation<[APNsRequest], Never>] in
            exit.unanswered = unanswered
            defer { exit.waiters = [] }
            return exit.waiters
        }
        for waiter in waiters { waiter.resume(returning: unanswered) }
    }

    private func promoteDueRetries(now: UInt64) {
        var remaining: [APNsJob] = []
        for job in delayed {
            if job.notBefore <= now { ready.append(job) } else { remaining.append(job) }
        }
        delayed = remaining
    }

    private func startReady() {
        // A cold connection takes one probe at a time until the first answer (see `APNsStreamLedger.warm`).
        // `start` may append to `ready` (a waiting job taking over a failed one's slot): the loop sees it too.
        var started = 0
        while started < ready.count && ledger.mayStart {
            start(ready[started])
            started += 1
        }
        ready.removeFirst(started)
    }

    private func start(_ job: APNsJob) {
        let token: ProviderTokenState.Token
        if let override = job.overrideToken {
            token = override
            job.overrideToken = nil
        } else {
            do {
                token = try pool.tokens.currentToken()
            } catch {
                finish(job, .failure(error))
                return
            }
        }
        job.tokenGeneration = token.generation

        let transfer: APNsTransfer
        if let reused = idle.popLast() {
            transfer = reused
        } else {
            do {
                nextTransferID += 1
                transfer = try APNsTransfer(id: nextTransferID, environment: environment, configuration: configuration)
                transfer.onHeadersComplete = { [unowned self] transfer in
                    if ledger.headersComplete(transfer.id, status: transfer.status) { answeredEarly.append(transfer) }
                }
                transfers.append(transfer)
            } catch {
                finish(job, .failure(.transport(Self.fatal(error), attempts: job.attempts)))
                return
            }
        }
        do {
            try transfer.load(job, jwt: token.jwt)
            try curlMultiCheck(curl_multi_add_handle(multi, transfer.easy), "curl_multi_add_handle")
        } catch {
            _ = transfer.unload()
            idle.append(transfer)
            finish(job, .failure(.transport(Self.fatal(error), attempts: job.attempts)))
            return
        }
        transfer.isAttached = true
        ledger.started(transfer.id)
        attached.add(1, ordering: .relaxed)
        job.attempts += 1
        if job.firstSentAt == 0 { job.firstSentAt = MonotonicClock.now() }
    }

    private func collectFinished() {
        var pending: Int32 = 0
        while let message = curl_multi_info_read(multi, &pending) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = ccurl_msg_result(message)
            guard let transfer = APNsTransfer.from(easy: easy) else { continue }
            completed(transfer, code: code)
        }
    }

    /// Reports the requests whose `200` header block arrived during the last `curl_multi_perform` at once, without
    /// waiting for curl to end their transfers (which can come late, or as a failure when the connection is reset
    /// right after the answer). Their handles stay attached until curl ends them; `completed` then recycles them.
    private func settleAnsweredEarly() {
        guard !answeredEarly.isEmpty else { return }
        let answered = answeredEarly
        answeredEarly = []
        lastAnswerAt = MonotonicClock.now()
        for transfer in answered {
            guard let job = transfer.unload() else { continue }
            var response = APNsResponse(
                status: 200, apnsID: transfer.apnsID, apnsUniqueID: transfer.apnsUniqueID, reason: nil, timestamp: nil)
            response.attempts = job.attempts
            finish(job, .response(response))
        }
    }

    private func completed(_ transfer: APNsTransfer, code: CURLcode) {
        curl_multi_remove_handle(multi, transfer.easy)
        transfer.isAttached = false
        attached.subtract(1, ordering: .relaxed)
        let newConnections = transfer.connectionsOpened
        if newConnections > 0 {
            opened.add(newConnections, ordering: .relaxed)
            logger.debug("APNs connection opened", ["connection": String(index)])
        }
        let status = transfer.responseCode
        var body: (reason: APNsReason?, timestamp: Date?) = (nil, nil)
        let completion: APNsStreamLedger.Completion
        if code == CURLE_OK && status > 0 {
            if status != 200 { body = APNsResponse.parseBody(transfer.responseBody) }
            completion = .completed(status: status, tokenRejected: body.reason?.isCredentialFault ?? false)
        } else {
            completion = .failed(code == CURLE_OK ? .connection : CurlGlobal.classify(code), status: status)
        }
        let settlement = ledger.ended(transfer.id, completion)
        let job = transfer.unload()
        idle.append(transfer)
        guard let job else { return }  // settled when its 200 arrived (`.alreadySettled`)

        var response: APNsResponse?
        var transportError: APNsTransportError?
        let outcome: APNsRetryPolicy.Outcome
        switch settlement {
        case .alreadySettled:
            return
        case .answered(let answeredStatus):
            response = APNsResponse(
                status: answeredStatus, apnsID: transfer.apnsID, apnsUniqueID: transfer.apnsUniqueID,
                reason: body.reason, timestamp: body.timestamp)
            outcome = .response(status: answeredStatus, reason: body.reason)
            lastAnswerAt = MonotonicClock.now()
        case .unanswered(let kind):
            transportError = APNsTransportError(
                kind: kind, code: Int(code.rawValue), message: transfer.errorMessage(code))
            outcome = .transport(kind)
        }

        if case .response(_, .tooManyProviderTokenUpdates?) = outcome {
            job.tokenUpdateRejections += 1
            pool.noteTokenUpdateRejected()
        }
        let now = MonotonicClock.now()
        let elapsed = Double(now &- job.firstSentAt) / 1e9
        let decision = configuration.retryPolicy.decide(
            outcome, attempts: job.attempts - job.tokenUpdateRejections, elapsed: elapsed,
            tokenRefreshed: job.tokenRefreshed, random: nextRandom(), tokenUpdateRejections: job.tokenUpdateRejections)
        switch decision {
        case .finish:
            if var response {
                response.attempts = job.attempts
                finish(job, .response(response))
            } else if let transportError {
                if transportError.kind == .fatal {
                    logger.warning("APNs transfer failed", ["error": transportError.description])
                }
                finish(job, .failure(.transport(transportError, attempts: job.attempts)))
            }
        case .retry(let after):
            pool.noteRetry()
            if after <= 0 {
                ready.append(job)
            } else {
                job.notBefore = now + UInt64(after * 1e9)
                delayed.append(job)
            }
        case .refreshTokenAndRetry:
            job.tokenRefreshed = true
            do {
                job.overrideToken = try pool.tokens.tokenAfterExpiry(generation: job.tokenGeneration)
                pool.noteRetry()
                ready.append(job)
            } catch {
                logger.warning("APNs provider token expired too early", ["team": pool.key.teamID])
                finish(job, .failure(error))
            }
        case .retryAfterTokenUpdateRejected(let after):
            // APNs holds another token for this key: adopt it if this process can find it (the store), else wait
            // for the refresh floor; never sign within it.
            do {
                switch try pool.tokens.tokenAfterUpdateRejected(generation: job.tokenGeneration) {
                case .retryNow(let token):
                    job.overrideToken = token
                    ready.append(job)
                case .retryLater:
                    job.notBefore = now + UInt64(after * 1e9)
                    delayed.append(job)
                }
                pool.noteRetry()
            } catch {
                finish(job, .failure(error))
            }
        case .configurationFault:
            let reason = response?.reason ?? .unknown("")
            logger.warning(
                "APNs rejected the credentials",
                ["team": pool.key.teamID, "key": pool.key.keyID, "reason": reason.rawValue])
            finish(job, .failure(.configuration(.rejected(status: status, reason: reason))))
        }
    }

    /// Reports the final result and frees the job's window slot (or takes over a waiting job in its place).
    private func finish(_ job: APNsJob, _ result: APNsResult) {
        // The slot is freed before the callback runs, so whoever sees the result also sees consistent stats.
        if let next = pool.finished(connection: index, result: result) { ready.append(next) }
        job.onResult(result)
    }

    private func abortEverything() -> [APNsRequest] {
        var jobs: [APNsJob] = []
        for transfer in transfers where transfer.isAttached {
            curl_multi_remove_handle(multi, transfer.easy)
            transfer.isAttached = false
            attached.subtract(1, ordering: .relaxed)
            if let job = transfer.unload() { jobs.append(job) }
        }
        jobs.append(contentsOf: ready)
        jobs.append(contentsOf: delayed)
        ready = []
        delayed = []
        for job in jobs { finish(job, .failure(.shutdown)) }
        for transfer in transfers { transfer.close() }
        transfers = []
        idle = []
        curl_multi_cleanup(multi)
        return jobs.map(\.request)
    }

    private func nextRandom() -> Double {
        // xorshift64*: jitter needs no cryptographic randomness, and SystemRandomNumberGenerator costs a syscall.
        random ^= random >> 12
        random ^= random << 25
        random ^= random >> 27
        return Double((random &* 2_685_821_657_736_338_717) >> 11) / Double(1 << 53)
    }

    private static func fatal(_ error: CurlError) -> APNsTransportError {
        APNsTransportError(kind: .fatal, code: error.code, message: error.description)
    }
}
