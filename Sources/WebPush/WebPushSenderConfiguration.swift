import Foundation
import HTTPClient
import Logging

/// How `WebPushSender` chooses destinations, connects, times out and retries.
package struct WebPushSenderConfiguration: Sendable {
    /// Push-service hosts messages may go to. Default `WebPushHostAllowlist.knownPushServices`.
    package var allowedHosts: WebPushHostAllowlist
    /// Any host on an allowed port instead of `allowedHosts` (UnifiedPush endpoints), with a share of the window
    /// per host (`windowPerService` then bounds one host) and a cap on distinct hosts. nil: the allow-list.
    package var openEndpoints: WebPushOpenEndpoints? = nil
    /// Address rules checked on every socket (no private, loopback or other special addresses unless allowed):
    /// the webhooks' SSRF rules. Default: none allowed. Tests allow exactly their local stand-in (127.0.0.1/32).
    package var policy: DestinationPolicy
    /// A CA bundle (PEM) to trust instead of the system's (the test stand-in's CA); nil: the system's.
    package var caFile: String?
    /// Curl multis (loop threads). Default 2.
    package var connections: Int
    /// Connections per push-service host per multi (HTTP/1.1 services take one request per connection at a
    /// time; HTTP/2 ones multiplex). Default 8.
    package var connectionsPerHost: Int
    /// Requests in flight, retries and their delays included: the backpressure window. Default 1024.
    package var window: Int
    /// Requests in flight to one push service (one `allowedHosts` pattern), at most `window`: a service that
    /// answers slowly or drops connection attempts holds at most this many slots, the rest of the window stays
    /// with the other services. Default 256 (a quarter of the window).
    package var windowPerService: Int
    /// One request, seconds. Default 30.
    package var requestTimeout: Double
    /// TCP + TLS connect bound, seconds. Short: push services are large anycast front ends that connect in well
    /// under a second, and a destination that drops connection attempts holds its slot for up to this long per
    /// attempt. Default 3.
    package var connectTimeout: Double
    /// Encrypt messages (RFC 8291, ~0.1 ms of CPU each) on the process's encryption workers, one thread per core
    /// shared by every sender, so a fan-out uses every core; each subscription's messages keep one worker, hence
    /// their order. false encrypts on the submitting task instead (one core per submitting task; kept to compare,
    /// see docs/BENCHMARKS.md). Default true.
    package var encryptsOnWorkers = true
    /// Retries of 429 and 5xx answers (and connection failures).
    package var retryPolicy: WebPushRetryPolicy
    /// The wall clock for HTTP-date `Retry-After` values.
    package var clock: @Sendable () -> Date
    package var logger: Logger

    package init(
        allowedHosts: WebPushHostAllowlist = .knownPushServices, policy: DestinationPolicy = DestinationPolicy(),
        caFile: String? = nil, connections: Int = 2, connectionsPerHost: Int = 8, window: Int = 1024,
        windowPerService: Int = 256, requestTimeout: Double = 30, connectTimeout: Double = 3,
        retryPolicy: WebPushRetryPolicy = WebPushRetryPolicy(),
        clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger = .disabled
    ) {
        self.allowedHosts = allowedHosts
        self.policy = policy
        self.caFile = caFile
        self.connections = max(1, connections)
        self.connectionsPerHost = max(1, connectionsPerHost)
        self.window = max(1, window)
        self.windowPerService = min(max(1, windowPerService), self.window)
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.retryPolicy = retryPolicy
        self.clock = clock
        self.logger = logger
    }
}

/// When to re-send a `retry` outcome (429, 5xx) or a lost connection: after `Retry-After` when the push service
/// sent one (exactly that long: RFC 8030 §8.4 asks the sender to wait it), else exponential backoff; bounded by
/// attempts, total delay, and the message's deadline (`RetryDeadline`: the publish's `expiresAt` or the message's
/// `TTL`), past which no retry is scheduled (docs/API.md "Retries").
package struct WebPushRetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included. Default 4.
    package var maxAttempts: Int
    /// Delay before the first retry, seconds; doubles per attempt. Default 1.
    package var initialDelay: Double
    /// Longest single backoff delay, seconds. Default 120.
    package var maxDelay: Double
    /// Give up when the delays so far plus the next one would exceed this, seconds. Default 600.
    package var maxTotalDelay: Double

    package init(maxAttempts: Int = 4, initialDelay: Double = 1, maxDelay: Double = 120, maxTotalDelay: Double = 600) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = max(0, initialDelay)
        self.maxDelay = max(self.initialDelay, maxDelay)
        self.maxTotalDelay = max(0, maxTotalDelay)
    }

    /// What to do after a retryable outcome.
    package enum Decision: Sendable, Equatable {
        /// Send again after this many seconds.
        case retry(after: Double)
        /// Stop: the last outcome is final.
        case finish
        /// Stop: the retry would go out after the message's deadline, so it is not scheduled (reported `Expired`).
        case expire
    }

    /// - Parameters:
    ///   - attempts: sends so far (≥ 1).
    ///   - elapsed: seconds of delay already spent on this message's retries.
    ///   - retryAfter: the push service's `Retry-After`, seconds, if it sent one.
    ///   - secondsLeft: seconds until the message's deadline (`RetryDeadline.secondsLeft`), nil when it has none.
    package func decide(attempts: Int, elapsed: Double, retryAfter: Int?, secondsLeft: Double? = nil) -> Decision {
        guard attempts < maxAttempts else { return .finish }
        let delay: Double
        if let retryAfter {
            delay = Double(max(0, retryAfter))
        } else {
            var backoff = initialDelay
            for _ in 1..<min(max(attempts, 1), 32) where backoff < maxDelay { backoff *= 2 }
            delay = min(backoff, maxDelay)
        }
        if RetryDeadline.isLate(delay: delay, secondsLeft: secondsLeft) { return .expire }
        guard elapsed + delay <= maxTotalDelay else { return .finish }
        return .retry(after: delay)
    }

    /// The delay before the next attempt, or nil to stop (no deadline). `attempts`: sends so far; `elapsed`: delay spent.
    package func delay(attempts: Int, elapsed: Double, retryAfter: Int?) -> Double? {
        if case .retry(let after) = decide(attempts: attempts, elapsed: elapsed, retryAfter: retryAfter) {
            return after
        }
        return nil
    }
}
