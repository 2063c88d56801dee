/// How to retry `retry` answers (`QUOTA_EXCEEDED`, `UNAVAILABLE`, `INTERNAL`): exponential backoff with jitter,
/// never sooner than `Retry-After`, at least a minute after `QUOTA_EXCEEDED` (Firebase's advice for 429), and
/// bounded by attempts and total delay (which the caller also bounds by the message's TTL).
public struct FCMRetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first send included. Default 5 (firebase-admin retries 4 times).
    public var maxAttempts: Int
    /// Delay before the first retry, seconds; doubles per attempt. Default 1.
    public var initialDelay: Double
    /// Longest single delay, seconds. Default 120 (firebase-admin-go's cap).
    public var maxDelay: Double
    /// Smallest delay after `QUOTA_EXCEEDED`, seconds. Default 60.
    public var quotaDelay: Double
    /// Give up when the delays so far plus the next one would exceed this, seconds. Default 600.
    public var maxTotalDelay: Double

    public init(maxAttempts: Int = 5, initialDelay: Double = 1, maxDelay: Double = 120, quotaDelay: Double = 60,
                maxTotalDelay: Double = 600) {
        precondition(maxAttempts >= 1 && initialDelay > 0 && maxDelay >= initialDelay && quotaDelay >= 0, "sane retry policy")
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.quotaDelay = quotaDelay
        self.maxTotalDelay = maxTotalDelay
    }

    /// What to do after a send answered `result`.
    public enum Decision: Sendable, Equatable {
        /// Re-send after this many seconds.
        case retry(after: Double)
        /// Stop: the result is final.
        case finish
    }

    /// - Parameters:
    ///   - attempts: sends made so far (≥ 1).
    ///   - elapsed: seconds of delay already spent on retries of this message.
    ///   - random: a number in 0..<1 for jitter (injected so tests are exact).
    public func decide(_ result: FCMSendResult, attempts: Int, elapsed: Double, random: Double) -> Decision {
        guard case .retry(let info, let retryAfter) = result, attempts < maxAttempts else { return .finish }
        var delay = initialDelay
        for _ in 1..<min(attempts, 32) where delay < maxDelay { delay *= 2 }
        // Full jitter on the upper half: [delay/2, delay).
        delay = min(delay, maxDelay) * (0.5 + 0.5 * min(max(random, 0), 1))
        if info.errorCode == "QUOTA_EXCEEDED" || info.httpStatus == 429 { delay = max(delay, quotaDelay) }
        if let retryAfter { delay = max(delay, retryAfter) }
        guard elapsed + delay <= maxTotalDelay else { return .finish }
        return .retry(after: delay)
    }
}
