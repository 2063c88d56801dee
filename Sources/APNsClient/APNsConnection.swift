import CLibCurl
import Dispatch
import HTTPClient
import Locking
import Logging
import Synchronization
import TLSIdentity

/// What a connection tells its pool, from its loop thread. The pool owns the window (slot accounting) and the
/// counters; the connection knows nothing of the pool.
enum APNsConnectionReport {
    /// A job has its final result: its window slot is free. The pool may answer with a waiting job that takes the
    /// slot over on this same connection.
    case finished(APNsResult)
    /// A job is being sent again.
    case retried
    /// APNs answered `TooManyProviderTokenUpdates`.
    case tokenUpdateRejected
}

/// One HTTP/2 connection slot: a curl multi limited to one connection, driven by its own `CurlMultiLoop` thread.
///
/// Why one multi per connection (not one multi with `MAX_HOST_CONNECTIONS = n`): libcurl's per-wake-up cost grows
/// with the handles on a multi (~0.7 ms per `curl_multi_perform` at 1000 handles, docs/BENCHMARKS.md), a
/// connection with a known stream budget is what APNs' per-connection `MAX_CONCURRENT_STREAMS` is about, and
/// `MAX_HOST_CONNECTIONS = 1` stops curl from opening extra connections while APNs allows only one stream before
/// the first authenticated request. The scheduling rules are `APNsConnectionStateMachine`; its actions are carried
/// out by `APNsConnectionDriver` on the loop thread.
final class APNsConnection: Sendable {
    /// Gauges the loop thread updates and `APNsPool.stats()` reads.
    final class Gauges: Sendable {
        /// Transfers attached to the multi.
        let attached = Atomic<Int>(0)
        /// TCP/TLS connections curl opened for this slot.
        let opened = Atomic<Int>(0)
        /// Easy handles (`APNsTransfer`s) made for this slot so far: at most its stream window.
        let created = Atomic<Int>(0)
    }

    let index: Int
    let gauges = Gauges()
    private let loop: CurlMultiLoop<APNsConnectionDriver>
    private let tokenErrands: TokenErrands

    /// - Parameter report: called on the loop thread for every `APNsConnectionReport`; keep it short.
    /// - Parameter identity: the client certificate of certificate credentials (then `tokens` is nil).
    init(
        index: Int, key: APNsPoolKey, tokens: ProviderTokenManager?, identity: TLSClientIdentity?,
        configuration: APNsClientConfiguration,
        logger: Logger, report: @escaping @Sendable (APNsConnectionReport) -> APNsJob?
    ) throws(CurlError) {
        self.index = index
        let multi = try CurlMulti(options: [
            (CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING"),
            (CURLMOPT_MAX_HOST_CONNECTIONS, 1, "CURLMOPT_MAX_HOST_CONNECTIONS"),
            (CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.streamsPerConnection, "CURLMOPT_MAX_CONCURRENT_STREAMS"),
        ])
        let errands = TokenErrands(report: report)
        let driver = APNsConnectionDriver(
            index: index, key: key, tokens: tokens, identity: identity, configuration: configuration, logger: logger,
            gauges: gauges,
            report: report, awayForToken: { job, work in errands.run(job, work) })
        let loop = CurlMultiLoop(name: "apns-conn-\(index)", multi: multi, driver: driver)
        errands.loop.withLock { $0 = loop }
        self.loop = loop
        tokenErrands = errands
    }

    /// Starts the loop thread.
    func start() {
        loop.start()
    }

    /// Hands a job to the loop. Returns false once the connection is stopping.
    func enqueue(_ job: APNsJob) -> Bool {
        loop.submit(job)
    }

    /// Aborts whatever is still running and stops the thread; returns the requests that got no final answer.
    /// Jobs away for a token get a moment to come back first, so they are returned with the rest.
    func stop() async -> [APNsRequest] {
        await tokenErrands.away.wait(until: { $0 == 0 }, timeout: TokenErrands.returnGrace, cancellable: false)
        let left = await loop.stop()
        tokenErrands.loop.withLock { $0 = nil }  // the loop keeps the errands through its driver: break the cycle
        return left
    }
}

/// Token calls a connection thread hands to tasks: getting a token may sign and call the store (a database round
/// trip), and the thread must not block on that while its other streams wait. The job goes to a task, which
/// records the answer in `APNsJob.tokenAnswer` and hands the job back through the loop's inbox; the thread feeds
/// the answer to its state machine when the job arrives (`APNsConnectionDriver.prepare`). The job keeps its window
/// slot all along.
final class TokenErrands: Sendable {
    /// How long `APNsConnection.stop` waits for jobs away for a token (the store's own timeout bounds them).
    static let returnGrace: Duration = .seconds(2)

    /// The loop jobs go back to; nil once it stopped.
    let loop = Locked<CurlMultiLoop<APNsConnectionDriver>?>(nil)
    /// Jobs away now.
    let away = WaitableState(0)
    private let report: @Sendable (APNsConnectionReport) -> APNsJob?

    init(report: @escaping @Sendable (APNsConnectionReport) -> APNsJob?) {
        self.report = report
    }

    /// Runs `work` for `job` in a task, then hands the job back to the loop; a job that finds the loop stopped is
    /// answered `.shutdown` and its slot freed, as the pool does for a job a stopping connection refuses.
    func run(_ job: APNsJob, _ work: @escaping @Sendable () async -> APNsJob.TokenAnswer) {
        away.update { $0 += 1 }
        Task {
            job.tokenAnswer = await work()
            let loop = self.loop.withLock { $0 }
            if loop?.submit(job) != true {
                job.tokenAnswer = nil
                var failed: APNsJob? = job
                while let next = failed {
                    failed = report(.finished(.failure(.shutdown)))
                    next.onResult(.failure(.shutdown))
                }
            }
            away.update { $0 -= 1 }
        }
    }
}
