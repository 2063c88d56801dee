import CLibCurl
import Clocks
import HTTPClient
import Logging
import TLSIdentity

/// The transport side of one APNs connection slot, on its `CurlMultiLoop` thread: feeds
/// `APNsConnectionStateMachine` what curl and the token manager report and carries out its actions (attach a
/// transfer, report a result, fetch a token). Owns the slot's transfers (easy handles) and nothing else; the pool
/// learns about results through `report`.
final class APNsConnectionDriver: CurlMultiDriver {
    typealias Job = APNsJob
    typealias Leftover = [APNsRequest]

    private let index: Int
    private let key: APNsPoolKey
    /// nil for certificate credentials: requests then carry no `authorization` header.
    private let tokens: ProviderTokenManager?
    private let identity: TLSClientIdentity?
    private let environment: APNsEnvironment
    private let configuration: APNsClientConfiguration
    private let logger: Logger
    private let gauges: APNsConnection.Gauges
    private let report: @Sendable (APNsConnectionReport) -> APNsJob?
    /// Runs a token call for a job in a task and hands the job back to this thread (`APNsConnection.awayForToken`).
    private let awayForToken: @Sendable (APNsJob, @escaping @Sendable () async -> APNsJob.TokenAnswer) -> Void
    private var machine: APNsConnectionStateMachine
    /// Every transfer of the slot; attached ones are in flight, the others wait in `idle` for reuse.
    private var transfers: [APNsTransfer] = []
    private var idle: [APNsTransfer] = []
    /// The most transfers the slot makes: its stream window. A job is final when its `200` header block is
    /// complete, and curl often ends that transfer one `curl_multi_perform` later, so the freed slot's next job can
    /// be ready while every transfer is still attached; it then waits for one to end (as curl would keep a
    /// transfer over the stream limit pending) instead of making another handle.
    private let maxTransfers: Int
    /// The header list the transfers share while their headers are the same (`APNsTransfer.SharedHeaders`).
    private let sharedHeaders = APNsTransfer.SharedHeaders()
    /// The monotonic clock read at the start of this turn's `prepare` and again after `curl_multi_perform`.
    private var turnNow: UInt64 = 0

    init(
        index: Int, key: APNsPoolKey, tokens: ProviderTokenManager?, identity: TLSClientIdentity?,
        configuration: APNsClientConfiguration, logger: Logger, gauges: APNsConnection.Gauges,
        report: @escaping @Sendable (APNsConnectionReport) -> APNsJob?,
        awayForToken: @escaping @Sendable (APNsJob, @escaping @Sendable () async -> APNsJob.TokenAnswer) -> Void
    ) {
        self.index = index
        self.awayForToken = awayForToken
        self.key = key
        self.tokens = tokens
        self.identity = identity
        self.environment = key.environment
        self.configuration = configuration
        self.logger = logger
        self.gauges = gauges
        self.report = report
        maxTransfers = max(1, configuration.streamsPerConnection)
        machine = APNsConnectionStateMachine(
            retryPolicy: configuration.retryPolicy,
            coldAfterIdleNanos: UInt64(max(0, min(configuration.maxIdleSeconds, 60))) * 1_000_000_000,
            seed: UInt64.random(in: 1...UInt64.max))
    }

    // MARK: - CurlMultiDriver

    func prepare(_ jobs: [APNsJob], multi: CurlMulti) {
        for job in jobs {
            guard let answer = job.tokenAnswer else {
                machine.enqueue(job)
                continue
            }
            // Back from a task that got its token (see `awayForToken`).
            job.tokenAnswer = nil
            switch answer {
            case .current(.success(let token)):
                job.overrideToken = token
                machine.enqueue(job)
            case .current(.failure(let failure)):
                run(machine.startFailed(job, failure))
            case .refreshed(let result):
                if case .failure = result {
                    logger.warning("APNs provider token expired too early", ["team": key.teamID])
                }
                run(machine.tokenRefreshed(job, result))
            case .rejectedResolved(let result):
                run(machine.rejectedTokenResolved(job, result))
            }
        }
        // One clock reading per turn, not one per job started or transfer ended (microseconds apart; the state
        // machine's times are for timeouts and retry delays of seconds).
        turnNow = MonotonicClock.now()
        run(machine.tick(now: turnNow))
        startReady(multi: multi)
    }

    func performed(_ error: CurlError?, multi: CurlMulti) {
        if let error { logger.error("curl_multi_perform failed", ["error": error.description]) }
        turnNow = MonotonicClock.now()
        while let (job, response) = machine.nextAnsweredEarly(now: turnNow) { finish(job, .response(response)) }
    }

    func ended(_ easy: UnsafeMutableRawPointer, code: CURLcode, multi: CurlMulti) {
        guard let transfer = APNsTransfer.from(easy: easy) else { return }
        transfer.isAttached = false
        gauges.attached.subtract(1, ordering: .relaxed)
        let newConnections = transfer.connectionsOpened
        if newConnections > 0 {
            gauges.opened.add(newConnections, ordering: .relaxed)
            logger.debug("APNs connection opened", ["connection": String(index)])
        }
        let status = transfer.responseCode
        var ending = APNsConnectionStateMachine.Ending(
            status: status, apnsID: transfer.apnsID, apnsUniqueID: transfer.apnsUniqueID)
        if code == CURLE_OK && status > 0 {
            if status != 200 { (ending.reason, ending.timestamp) = APNsResponse.parseBody(transfer.responseBody) }
        } else {
            ending.failure = APNsTransportError(
                kind: code == CURLE_OK ? .connection : CurlGlobal.classify(code), code: Int(code.rawValue),
                message: transfer.errorMessage(code))
        }
        idle.append(transfer)
        run(machine.ended(stream: transfer.id, ending, now: turnNow))
        // The jobs this turn's answers made ready (or that waited for a transfer) go out on this one now, before
        // the next turn's `prepare` would start them on new handles while curl still holds this turn's ended ones.
        startReady(multi: multi)
    }

    func pollTimeout() -> Int32 {
        machine.pollTimeout(now: MonotonicClock.now(), transferFree: hasFreeTransfer)
    }

    func abort(unstarted: [APNsJob], multi: CurlMulti) -> [APNsRequest] {
        for job in unstarted { machine.enqueue(job) }
        for transfer in transfers where transfer.isAttached {
            try? multi.remove(transfer.curl)  // fails only if not attached: it is detached either way
            transfer.isAttached = false
            gauges.attached.subtract(1, ordering: .relaxed)
        }
        var jobs = machine.abort()
        var index = 0
        while index < jobs.count {
            // During shutdown the pool admits no waiter; should one come anyway, it is failed the same way.
            if let next = report(.finished(.failure(.shutdown))) { jobs.append(next) }
            jobs[index].onResult(.failure(.shutdown))
            index += 1
        }
        for transfer in transfers { transfer.close() }
        transfers = []
        idle = []
        return jobs.map(\.request)
    }

    /// Whether a job could start now: an idle transfer to reuse, or room below `maxTransfers` for a new one.
    private var hasFreeTransfer: Bool { !idle.isEmpty || transfers.count < maxTransfers }

    /// Starts ready jobs while a transfer is free. A cold connection takes one probe at a time (see
    /// `APNsStreamLedger.warm`). A failed start may hand the freed slot to a waiting job, which `nextToStart` then
    /// sees too.
    private func startReady(multi: CurlMulti) {
        while hasFreeTransfer, let job = machine.nextToStart() { start(job, multi: multi) }
    }

    // MARK: - Actions

    private func run(_ actions: [APNsConnectionStateMachine.Action]) {
        for action in actions {
            switch action {
            case .finish(let job, let result):
                finish(job, result)
            case .countRetry:
                _ = report(.retried)
            case .countTokenUpdateRejected:
                _ = report(.tokenUpdateRejected)
            case .refreshToken(let job):
                guard let tokens else {
                    logger.warning("APNs provider token expired too early", ["team": key.teamID])
                    run(machine.tokenRefreshed(job, .failure(Self.noTokens(.expiredProviderToken, status: 403))))
                    continue
                }
                let generation = job.tokenGeneration
                awayForToken(job) {
                    do throws(APNsFailure) {
                        return .refreshed(.success(try await tokens.tokenAfterExpiry(generation: generation)))
                    } catch {
                        return .refreshed(.failure(error))
                    }
                }
            case .resolveRejectedToken(let job):
                // APNs holds another token for this key: adopt it if this process can find it (the store), else
                // wait for the refresh floor; never sign within it.
                guard let tokens else {
                    run(
                        machine.rejectedTokenResolved(
                            job, .failure(Self.noTokens(.tooManyProviderTokenUpdates, status: 429))))
                    continue
                }
                let generation = job.tokenGeneration
                awayForToken(job) {
                    do throws(APNsFailure) {
                        return .rejectedResolved(
                            .success(try await tokens.tokenAfterUpdateRejected(generation: generation)))
                    } catch {
                        return .rejectedResolved(.failure(error))
                    }
                }
            case .warnTransferFailed(let error):
                logger.warning("APNs transfer failed", ["error": error.description])
            case .warnCredentialsRejected(let reason):
                logger.warning(
                    "APNs rejected the credentials", ["team": key.teamID, "key": key.keyID, "reason": reason.rawValue])
            case .warnRequestTimedOut(let diagnosis, let attempts):
                logger.warning(
                    "APNs request timed out",
                    ["connection": String(index), "attempts": String(attempts), "state": diagnosis.description])
            }
        }
    }

    /// Reports the job's final result: its window slot is free.
    private func finish(_ job: APNsJob, _ result: APNsResult) {
        // The slot is freed before the callback runs, so whoever sees the result also sees consistent stats.
        if let next = report(.finished(result)) { machine.enqueue(next) }
        job.onResult(result)
    }

    private func start(_ job: APNsJob, multi: CurlMulti) {
        var jwt: String?
        if let override = job.overrideToken {
            jwt = override.jwt
            job.tokenGeneration = override.generation
            job.overrideToken = nil
        } else if let tokens {
            guard let token = tokens.readyToken() else {
                // A token is due: signing it may call the store, so a task gets it while this thread serves its
                // other streams; the job comes back through `prepare` with the token.
                awayForToken(job) {
                    do throws(APNsFailure) {
                        return .current(.success(try await tokens.currentToken()))
                    } catch {
                        return .current(.failure(error))
                    }
                }
                return
            }
            jwt = token.jwt
            job.tokenGeneration = token.generation
        }

        let transfer: APNsTransfer
        if let reused = idle.popLast() {
            transfer = reused
        } else {
            do {
                transfer = try APNsTransfer(
                    id: transfers.count + 1, environment: environment, identity: identity,
                    configuration: configuration, sharedHeaders: sharedHeaders)
            } catch {
                run(machine.startFailed(job, .transport(Self.fatal(error), attempts: job.attempts)))
                return
            }
            transfer.onSending = { [unowned self] transfer, port in
                machine.sending(stream: transfer.id, connection: port)
            }
            transfer.onHeadersComplete = { [unowned self] transfer in
                machine.headersComplete(
                    stream: transfer.id, status: transfer.status, apnsID: transfer.apnsID,
                    apnsUniqueID: transfer.apnsUniqueID)
            }
            transfers.append(transfer)
            gauges.created.add(1, ordering: .relaxed)
        }
        do {
            try transfer.load(job.prepared, jwt: jwt)
            try multi.add(transfer.curl)
        } catch {
            idle.append(transfer)
            run(machine.startFailed(job, .transport(Self.fatal(error), attempts: job.attempts)))
            return
        }
        transfer.isAttached = true
        gauges.attached.add(1, ordering: .relaxed)
        machine.started(job, stream: transfer.id, now: turnNow)
    }

    /// A token-only answer (`ExpiredProviderToken`, `TooManyProviderTokenUpdates`) on a certificate connection,
    /// which sends no token: nothing to refresh, so the credentials are reported as rejected.
    private static func noTokens(_ reason: APNsReason, status: Int) -> APNsFailure {
        .configuration(.rejected(status: status, reason: reason))
    }

    private static func fatal(_ error: CurlError) -> APNsTransportError {
        APNsTransportError(kind: .fatal, code: error.code, message: error.description)
    }
}
