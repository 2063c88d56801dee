import CLibCurl
import Foundation
import Locking

/// Sends single HTTP POSTs (webhooks) through libcurl, safely towards untrusted URLs: only http and https, no
/// redirects, a connect and a total time limit, a response size cap, and a `DestinationPolicy` checked on the
/// address of every socket curl opens, after DNS resolution (no DNS-rebinding window between check and use).
///
/// ```swift
/// let client = try HTTPPostClient(configuration: HTTPPostConfiguration(policy: policy))
/// let status = try await client.post(url: "https://hooks.example.com/beams", headers: [:], body: bytes)
/// await client.shutdown()
/// ```
///
/// One curl multi on its own thread runs every transfer side by side (and keeps idle connections for reuse);
/// callers suspend on a continuation, never blocking the Swift concurrency pool. Callers bound concurrency
/// (the webhook outbox claims at most 16 webhooks at a time).
///
/// @unchecked Sendable: the multi and the transfer table are touched only by the loop thread once it started;
/// other threads reach it through the `Locked` inbox plus `curl_multi_wakeup`, which curl documents as callable
/// from any thread (and which is only called while the multi is alive: see `post`).
public final class HTTPPostClient: @unchecked Sendable {
    private struct Job: Sendable {
        var url: HTTPURL
        var headers: [String: String]
        var body: [UInt8]
        var continuation: CheckedContinuation<Result<Int, HTTPPostError>, Never>
    }

    private struct Inbox {
        var jobs: [Job] = []
        /// `shutdown()` was called: refuse new jobs.
        var stop = false
        /// The loop saw `stop`; it frees the multi next, so nobody may wake it any more.
        var stopped = false
        /// The loop thread has exited.
        var finished = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    public let configuration: HTTPPostConfiguration
    private let multi: UnsafeMutableRawPointer
    private let inbox = Locked(Inbox())
    /// Loop-thread state: transfers attached to the multi, by easy handle.
    private var running: [UnsafeMutableRawPointer: HTTPPostTransfer] = [:]

    /// Creates the multi and starts its thread.
    /// - Throws: `CurlError` when libcurl cannot be initialised.
    public init(configuration: HTTPPostConfiguration = HTTPPostConfiguration()) throws(CurlError) {
        try CurlGlobal.ensureInitialised()
        guard let multi = curl_multi_init() else { throw .outOfMemory("curl_multi_init") }
        self.multi = multi
        self.configuration = configuration
        do {
            try curlMultiCheck(ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, configuration.maxIdleConnections),
                               "CURLMOPT_MAXCONNECTS")
        } catch {
            curl_multi_cleanup(multi)
            throw error
        }
        let thread = Thread { [self] in run() }
        thread.name = "http-post"
        thread.start()
    }

    /// POSTs `body` to `url` and returns the response status. Any status is a response (3xx included: redirects
    /// are not followed); deciding what counts as success is the caller's business.
    /// - Throws: `HTTPPostError` when no response arrived: refused destination, invalid URL, timeout, response
    ///   too large, connection failure, or shutdown.
    public func post(url: String, headers: [String: String], body: [UInt8]) async throws(HTTPPostError) -> Int {
        let target: HTTPURL
        do {
            target = try HTTPURL(url)
        } catch {
            throw HTTPPostError(.invalidURL, "the URL \(error)")
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Int, HTTPPostError>, Never>) in
            let job = Job(url: target, headers: headers, body: body, continuation: continuation)
            let accepted = inbox.withLock { inbox -> Bool in
                guard !inbox.stop else { return false }
                // The loop drains the whole inbox each turn, so only the first job after a drain must wake it.
                // Under the lock: the loop marks itself stopped under it before freeing the multi.
                if inbox.jobs.isEmpty { curl_multi_wakeup(multi) }
                inbox.jobs.append(job)
                return true
            }
            if !accepted { continuation.resume(returning: .failure(HTTPPostError(.shutdown, "the client is shut down"))) }
        }
        return try result.get()
    }

    /// Aborts transfers in flight (they fail with `.shutdown`), frees every curl handle and waits for the thread
    /// to exit. Idempotent.
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = inbox.withLock { inbox -> Bool in
                if inbox.finished { return true }
                if !inbox.stop && !inbox.stopped { curl_multi_wakeup(multi) }
                inbox.stop = true
                inbox.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    // MARK: - Loop thread

    private func run() {
        while true {
            let (jobs, stop) = inbox.withLock { inbox -> ([Job], Bool) in
                let jobs = inbox.jobs
                inbox.jobs = []
                if inbox.stop { inbox.stopped = true }
                return (jobs, inbox.stop)
            }
            if stop {
                for job in jobs { job.continuation.resume(returning: .failure(HTTPPostError(.shutdown, "shutting down"))) }
                break
            }
            for job in jobs { start(job) }
            var stillRunning: Int32 = 0
            _ = curl_multi_perform(multi, &stillRunning)  // per-transfer errors arrive through info_read
            collectFinished()
            // Waits for socket activity, curl's own timers (capped by its timeout hint) or a wake-up.
            _ = curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        for (easy, transfer) in running {
            curl_multi_remove_handle(multi, easy)
            transfer.finish(.failure(HTTPPostError(.shutdown, "shutting down")))
        }
        running = [:]
        curl_multi_cleanup(multi)
        let waiters = inbox.withLock { inbox -> [CheckedContinuation<Void, Never>] in
            inbox.finished = true
            defer { inbox.waiters = [] }
            return inbox.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func start(_ job: Job) {
        let continuation = job.continuation
        let transfer: HTTPPostTransfer
        do {
            transfer = try HTTPPostTransfer(target: job.url, headers: job.headers, body: job.body,
                                            configuration: configuration) { continuation.resume(returning: $0) }
        } catch {
            continuation.resume(returning: .failure(error))
            return
        }
        let easy = transfer.curl.handle
        do {
            try curlMultiCheck(curl_multi_add_handle(multi, easy), "curl_multi_add_handle")
        } catch {
            transfer.finish(.failure(HTTPPostError(.internalError, error.description)))
            return
        }
        running[easy] = transfer
    }

    private func collectFinished() {
        var pending: Int32 = 0
        while let message = curl_multi_info_read(multi, &pending) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                  let transfer = running.removeValue(forKey: easy)
            else { continue }
            let result = transfer.result(ccurl_msg_result(message))
            curl_multi_remove_handle(multi, easy)
            transfer.finish(result)
        }
    }
}
