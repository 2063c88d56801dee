import CLibCurl
import Clocks
import Foundation
import Locking
import Synchronization

/// Sends `HTTPExchange`s over a small pool of curl multis, each driven by its own `CurlMultiLoop` thread (the one
/// curl loop of the process, with `HTTPExchangeDriver` as its driver). HTTP/2 streams multiplex on each multi's
/// connection; an exchange may be scheduled for later (a retry after `Retry-After`), which the loop holds as a
/// real deadline in its poll timeout: no thread sleeps.
///
/// ```swift
/// let client = try HTTPExchangeClient(configuration: HTTPExchangeConfiguration(name: "fcm"))
/// client.submit(exchange) { result in … }        // any thread; the callback runs on a loop thread
/// client.submit(exchange, after: 2.5) { … }      // a retry, not before 2.5 s from now
/// await client.shutdown()                        // unfinished exchanges end with `.shutdown`
/// ```
///
/// The outbound HTTP client of everything but APNs pushes (`APNsClient` drives its own pools on `CurlMultiLoop`):
/// FCM, Web Push, APNs broadcast calls and webhooks each have one (its own configuration and threads). The senders built on it (FCM, Web Push) bound what is in flight with an
/// `InFlightWindow`, the webhook outbox with its scheduler; this client queues whatever it is given.
package final class HTTPExchangeClient: Sendable {
    package let configuration: HTTPExchangeConfiguration
    private let loops: [CurlMultiLoop<HTTPExchangeDriver>]
    private let gauges: [HTTPExchangeDriver.Gauges]
    /// The loop the last exchange went to (`LoopChoice`).
    private let lastLoop = Atomic<Int>(0)
    /// How many more queued exchanges than the least busy loop the last one may carry and still take the next.
    private let stickiness: Int

    /// Creates the multis and starts their threads.
    /// - Throws: `CurlError` when libcurl cannot be initialised or refuses an option.
    package init(configuration: HTTPExchangeConfiguration) throws(CurlError) {
        try CurlGlobal.ensureInitialised()
        self.configuration = configuration
        var loops: [CurlMultiLoop<HTTPExchangeDriver>] = []
        var gauges: [HTTPExchangeDriver.Gauges] = []
        for index in 0..<configuration.connections {
            var options: [(CURLMoption, Int, String)] = [
                (CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING"),
                (CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost, "CURLMOPT_MAX_HOST_CONNECTIONS"),
                (
                    CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.streamsPerConnection,
                    "CURLMOPT_MAX_CONCURRENT_STREAMS"
                ),
            ]
            if let idle = configuration.maxIdleConnections {
                options.append((CURLMOPT_MAXCONNECTS, idle, "CURLMOPT_MAXCONNECTS"))
            }
            let multi = try CurlMulti(options: options)
            let gauge = HTTPExchangeDriver.Gauges()
            let driver = HTTPExchangeDriver(configuration: configuration, gauges: gauge)
            loops.append(CurlMultiLoop(name: "\(configuration.name)-\(index)", multi: multi, driver: driver))
            gauges.append(gauge)
        }
        self.loops = loops
        self.gauges = gauges
        stickiness = InFlightWindow.resumeBatch(
            capacity: configuration.connections * configuration.streamsPerConnection)
        for loop in loops { loop.start() }
    }

    /// Hands `exchange` to a loop (the one the last exchange went to while it is about as busy as the least busy,
    /// `LoopChoice`), to start at once or `after` seconds from now. `completion` fires exactly once, on a loop thread
    /// (or on the caller's thread with `.shutdown` once the client is stopping); keep it short and never block in it.
    package func submit(
        _ exchange: HTTPExchange, after delay: Double = 0,
        completion: @escaping @Sendable (HTTPExchangeResult) -> Void
    ) {
        let gauges = gauges
        let index = LoopChoice.pick(
            count: gauges.count, last: lastLoop.load(ordering: .relaxed), slack: stickiness,
            limit: configuration.streamsPerConnection
        ) { gauges[$0].queued.load(ordering: .relaxed) }
        lastLoop.store(index, ordering: .relaxed)
        let seconds = delay.isFinite ? min(max(delay, 0), 86_400) : 0
        let notBefore = seconds > 0 ? MonotonicClock.now() &+ UInt64(seconds * 1e9) : 0
        let gauge = gauges[index]
        gauge.queued.add(1, ordering: .relaxed)
        let job = HTTPExchangeDriver.Job(exchange: exchange, notBefore: notBefore) { result in
            gauge.queued.subtract(1, ordering: .relaxed)
            completion(result)
        }
        if !loops[index].submit(job) {
            gauge.queued.subtract(1, ordering: .relaxed)
            completion(.failure(HTTPExchangeError(.shutdown, "the client is shut down")))
        }
    }

    /// Sends `exchange` and suspends until it ends (never blocking a thread of the Swift concurrency pool).
    /// - Returns: the answer, whatever its status (3xx included: redirects are never followed).
    /// - Throws: `HTTPExchangeError` when no answer arrived: refused destination, invalid URL, timeout, response
    ///   too large, connection failure, or shutdown.
    package func send(_ exchange: HTTPExchange) async throws(HTTPExchangeError) -> HTTPExchangeResponse {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPExchangeResult, Never>) in
            submit(exchange) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Exchanges attached to curl right now (HTTP/2 streams open or about to open), across loops.
    package var transfersInFlight: Int { gauges.reduce(0) { $0 + $1.attached.load(ordering: .relaxed) } }
    /// Exchanges waiting for their start time (scheduled retries), across loops.
    package var scheduled: Int { gauges.reduce(0) { $0 + $1.delayed.load(ordering: .relaxed) } }
    /// TCP/TLS connections opened so far, across loops.
    package var connectionsOpened: Int { gauges.reduce(0) { $0 + $1.opened.load(ordering: .relaxed) } }

    /// Aborts every exchange still running or scheduled (each ends with `.shutdown`), frees the curl handles and
    /// waits for the loop threads to exit. Idempotent.
    package func shutdown() async {
        for loop in loops { await loop.stop() }
    }
}
