import CLibCurl
import Foundation

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
/// One `CurlMultiLoop` (thread `http-post`) runs every transfer side by side (and keeps idle connections for
/// reuse); callers suspend on a continuation, never blocking the Swift concurrency pool. Callers bound concurrency
/// (the webhook outbox claims at most 16 webhooks at a time).
public final class HTTPPostClient: Sendable {
    public let configuration: HTTPPostConfiguration
    private let loop: CurlMultiLoop<HTTPPostDriver>

    /// Creates the multi and starts its thread.
    /// - Throws: `CurlError` when libcurl cannot be initialised.
    public init(configuration: HTTPPostConfiguration = HTTPPostConfiguration()) throws(CurlError) {
        let multi = try CurlMulti(options: [(CURLMOPT_MAXCONNECTS, configuration.maxIdleConnections, "CURLMOPT_MAXCONNECTS")])
        self.configuration = configuration
        loop = CurlMultiLoop(name: "http-post", multi: multi, driver: HTTPPostDriver(configuration: configuration))
        loop.start()
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
            let job = HTTPPostDriver.Job(url: target, headers: headers, body: body, continuation: continuation)
            if !loop.submit(job) {
                continuation.resume(returning: .failure(HTTPPostError(.shutdown, "the client is shut down")))
            }
        }
        return try result.get()
    }

    /// Aborts transfers in flight (they fail with `.shutdown`), frees every curl handle and waits for the thread
    /// to exit. Idempotent.
    public func shutdown() async {
        await loop.stop()
    }
}

/// The webhook client's side of its curl loop: starts a transfer per job and resumes the job's continuation
/// when curl ends it. Loop-thread only.
final class HTTPPostDriver: CurlMultiDriver {
    struct Job: Sendable {
        var url: HTTPURL
        var headers: [String: String]
        var body: [UInt8]
        var continuation: CheckedContinuation<Result<Int, HTTPPostError>, Never>
    }

    private let configuration: HTTPPostConfiguration
    private var running = AttachedTransfers<HTTPPostTransfer>()

    init(configuration: HTTPPostConfiguration) {
        self.configuration = configuration
    }

    func prepare(_ jobs: [Job], multi: CurlMulti) {
        for job in jobs { start(job, multi: multi) }
    }

    func performed(_ error: CurlError?, multi: CurlMulti) {}  // per-transfer errors arrive through `ended`

    func ended(_ easy: UnsafeMutableRawPointer, code: CURLcode, multi: CurlMulti) {
        guard let transfer = running.remove(easy) else { return }
        transfer.finish(transfer.result(code))
    }

    /// Waits for socket activity, curl's own timers (capped by its timeout hint) or a wake-up.
    func pollTimeout() -> Int32 { 1000 }

    func abort(unstarted: [Job], multi: CurlMulti) {
        for job in unstarted { job.continuation.resume(returning: .failure(HTTPPostError(.shutdown, "shutting down"))) }
        running.abortAll(multi: multi)
    }

    private func start(_ job: Job, multi: CurlMulti) {
        let continuation = job.continuation
        let transfer: HTTPPostTransfer
        do {
            transfer = try HTTPPostTransfer(target: job.url, headers: job.headers, body: job.body,
                                            configuration: configuration) { continuation.resume(returning: $0) }
        } catch {
            continuation.resume(returning: .failure(error))
            return
        }
        running.attach(transfer, to: multi)
    }
}
