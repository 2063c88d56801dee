import CLibCurl
import Clocks
import Synchronization

/// The loop-thread side of one `HTTPExchangeClient` multi: starts each job's transfer when it is due (at once, or
/// at its `notBefore` deadline, which bounds the poll timeout) and reports curl's ending through the job's
/// completion. Loop-thread only.
final class HTTPExchangeDriver: CurlMultiDriver {
    /// Counters the loop thread (and `HTTPExchangeClient.submit`) update and the client reads.
    final class Gauges: Sendable {
        /// Jobs handed to this loop and not yet complete (the client's load balance).
        let queued = Atomic<Int>(0)
        /// Transfers attached to the multi.
        let attached = Atomic<Int>(0)
        /// Jobs waiting for their start time.
        let delayed = Atomic<Int>(0)
        /// TCP/TLS connections curl opened.
        let opened = Atomic<Int>(0)
    }

    struct Job: Sendable {
        var exchange: HTTPExchange
        /// Monotonic nanoseconds before which the transfer must not start; 0: at once.
        var notBefore: UInt64
        var completion: @Sendable (HTTPExchangeResult) -> Void
    }

    private let configuration: HTTPExchangeConfiguration
    private let gauges: Gauges
    private var running = AttachedTransfers<HTTPExchangeTransfer>()
    private var delayed: [Job] = []
    /// Handles of transfers that ended well, for the next exchanges (at most `maxSpareHandles`): a new handle per
    /// request allocated and freed libcurl's per-handle state for every FCM and Web Push message, where the APNs
    /// client reuses its handles (docs/BENCHMARKS.md, issue 27; the senders' peak RSS fell with it, 62 → 45 MB for
    /// 20,000 FCM messages).
    private var spare: [CurlEasy] = []
    private let maxSpareHandles: Int
    /// The header list of the last exchange that had header lines of its own, reused while the next ones carry the
    /// same lines (an FCM sender sends one set per access token): one list instead of one per request. Each
    /// transfer holds the list it was given, so replacing it here never frees one curl still reads.
    private var lastHeaders: (lines: [String], list: CurlHeaderList)?

    init(configuration: HTTPExchangeConfiguration, gauges: Gauges) {
        self.configuration = configuration
        self.gauges = gauges
        maxSpareHandles = min(max(configuration.streamsPerConnection, 1), 256)
    }

    func prepare(_ jobs: [Job], multi: CurlMulti) {
        let now = MonotonicClock.now()
        if !delayed.isEmpty {
            var waiting: [Job] = []
            for job in delayed {
                if job.notBefore <= now { start(job, multi: multi) } else { waiting.append(job) }
            }
            delayed = waiting
        }
        for job in jobs {
            if job.notBefore > now { delayed.append(job) } else { start(job, multi: multi) }
        }
        gauges.delayed.store(delayed.count, ordering: .relaxed)
    }

    func performed(_ error: CurlError?, multi: CurlMulti) {}  // per-transfer errors arrive through `ended`

    func ended(_ easy: UnsafeMutableRawPointer, code: CURLcode, multi: CurlMulti) {
        guard let transfer = running.remove(easy) else { return }
        gauges.attached.subtract(1, ordering: .relaxed)
        let opened = transfer.curl.connectionsOpened
        if opened > 0 { gauges.opened.add(opened, ordering: .relaxed) }
        let result = transfer.result(code)
        // Only a handle whose transfer succeeded goes back: after a failure it is freed, like any other before.
        if code == CURLE_OK && spare.count < maxSpareHandles { spare.append(transfer.handOverHandle()) }
        transfer.finish(result)
    }

    /// Until the next scheduled job is due (a real deadline), at most a second; curl's own timers and
    /// `curl_multi_wakeup` end the poll earlier.
    func pollTimeout() -> Int32 {
        guard !delayed.isEmpty else { return 1000 }
        let now = MonotonicClock.now()
        var timeout: UInt64 = 1000
        for job in delayed {
            let millis = job.notBefore > now ? (job.notBefore - now + 999_999) / 1_000_000 : 0
            timeout = min(timeout, millis)
        }
        return Int32(timeout)
    }

    func abort(unstarted: [Job], multi: CurlMulti) {
        running.abortAll(multi: multi)
        for handle in spare { handle.close() }
        spare = []
        gauges.attached.store(0, ordering: .relaxed)
        let waiting = delayed + unstarted
        delayed = []
        gauges.delayed.store(0, ordering: .relaxed)
        let shutdown = HTTPExchangeError(.shutdown, "shutting down")
        for job in waiting { job.completion(.failure(shutdown)) }
    }

    /// The shared list for `lines` when the last one was built from equal lines, else a new one that becomes the
    /// shared one; nil when the lines are refused (the transfer builds them itself and reports why).
    private func headerList(for lines: [String]) -> CurlHeaderList? {
        if let lastHeaders, lastHeaders.lines == lines { return lastHeaders.list }
        guard let list = try? HTTPExchangeTransfer.headerList(lines) else { return nil }
        lastHeaders = (lines, list)
        return list
    }

    private func start(_ job: Job, multi: CurlMulti) {
        let transfer: HTTPExchangeTransfer
        do {
            transfer = try HTTPExchangeTransfer(
                job.exchange, configuration: configuration, reusing: spare.popLast(),
                headerList: headerList(for: job.exchange.headers), completion: job.completion)
        } catch {
            job.completion(.failure(error))
            return
        }
        if running.attach(transfer, to: multi) { gauges.attached.add(1, ordering: .relaxed) }
    }
}
