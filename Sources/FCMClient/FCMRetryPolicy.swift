import HTTPClient

/// How to retry `retry` answers (`QUOTA_EXCEEDED`, `UNAVAILABLE`, `INTERNAL`) and lost connections: after
/// `Retry-After` when FCM sent one (exactly that long: FCM's own instruction), else with exponential backoff and
/// jitter, at least `quotaDelay` (a minute) after a `429` without `Retry-After` (Firebase's advice for 429,
/// docs/API.md "Retries"); bounded by attempts, total delay, and the message's deadline (`RetryDeadline`: the
/// publish's `expiresAt` or the message's `time_to_live`), past which no retry is scheduled.
package struct FCMRetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first send included. Default 5 (firebase-admin retries 4 times).
    package var maxAttempts: Int
    /// Delay before the first retry, seconds; doubles per attempt. Default 1.
    package var initialDelay: Double
    /// Longest single delay, seconds. Default 120 (firebase-admin-go's cap).
    package var maxDelay: Double
    /// Smallest delay after `QUOTA_EXCEEDED` (or any 429) that came without `Retry-After`, seconds. Default 60.
    package var quotaDelay: Double
    /// Give up when the delays so far plus the next one would exceed this, seconds. Default 600.
    package var maxTotalDelay: Double

    package init(
        maxAttempts: Int = 5, initialDelay: Double = 1, maxDelay: Double = 120, quotaDelay: Double = 60,
        maxTotalDelay: Double = 600
    ) {
        precondition(
            maxAttempts >= 1 && initialDelay > 0 && maxDelay >= initialDelay && quotaDelay >= 0, "sane retry policy")
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.quotaDelay = quotaDelay
        self.maxTotalDelay = maxTotalDelay
    }

    /// What to do after a send answered `result`.
    package enum Decision: Sendable, Equatable {
        /// Re-send after this many seconds.
        case retry(after: Double)
        /// Stop: the result is final.
        case finish
        /// Stop: the retry would go out after the message's deadline, so it is not scheduled (reported `Expired`).
        case expire
    }

    /// - Parameters:
    ///   - attempts: sends made so far (≥ 1).
    ///   - elapsed: seconds of delay already spent on retries of this message.
    ///   - random: a number in 0..<1 for jitter (injected so tests are exact).
    ///   - secondsLeft: seconds until the message's deadline (`RetryDeadline.secondsLeft`), nil when it has none.
    package func decide(
        _ result: FCMSendResult, attempts: Int, elapsed: Double, random: Double,
        secondsLeft: Double? = nil
    ) -> Decision {
        guard case .retry(let info, let retryAfter) = result, attempts < maxAttempts else { return .finish }
        let delay: Double
        if let retryAfter, retryAfter.isFinite {
            delay = max(0, retryAfter)
        } else {
            var backoff = initialDelay
            for _ in 1..<min(attempts, 32) where backoff < maxDelay { backoff *= 2 }
            // Full jitter on the upper half: [delay/2, delay).
            backoff = min(backoff, maxDelay) * (0.5 + 0.5 * min(max(random, 0), 1))
            if info.errorCode == "QUOTA_EXCEEDED" || info.httpStatus == 429 { backoff = max(backoff, quotaDelay) }
            delay = backoff
        }
        if RetryDeadline.isLate(delay: delay, secondsLeft: secondsLeft) { return .expire }
        guard elapsed + delay <= maxTotalDelay else { return .finish }
        return .retry(after: delay)
    }
}
