/// Which failed attempts to repeat and when (docs/APNS.md §5.1). A pure function of the outcome, the attempt count,
/// elapsed time and a random number, so it is tested without sockets or sleeping.
///
/// - Never retried: `BadDeviceToken`, `DeviceTokenNotForTopic`, `Forbidden`, `ExpiredToken`, `Unregistered`,
///   `PayloadTooLarge` and every other 4xx about the request (they need a fix, not a repeat), and fatal
///   transport errors (TLS verification, bad URL).
/// - Retried with exponential backoff and jitter, bounded by `maxAttempts` and `maxTotalDelay`: `429
///   TooManyRequests`, 5xx, timeouts, and connection failures. A connection failure (GOAWAY, reset) is re-sent
///   at once the first time: the request got no answer and a new connection is usually fine.
/// - `403 ExpiredProviderToken`: refresh the token and retry once.
/// - `429 TooManyProviderTokenUpdates`: APNs holds a newer token for the key (another process or node signed one):
///   re-sent with backoff (at least `tokenUpdateRejectedDelay`, at most `maxDelay` apart) for up to
///   `tokenUpdateRejectedWindow` seconds, long enough for the 20-minute refresh floor to pass, so the notification
///   is delayed, never lost. These attempts do not count against `maxAttempts`.
/// - Other credential rejections (`InvalidProviderToken`, …): a configuration fault, never a loop.
package struct APNsRetryPolicy: Sendable, Hashable {
    /// Attempts in total, the first included. Default 5.
    package var maxAttempts: Int
    /// Delay before the first backoff retry, seconds; doubles per attempt. Default 0.2.
    package var baseDelay: Double
    /// Cap on one delay, seconds. Default 10.
    package var maxDelay: Double
    /// No retry is scheduled past this many seconds after the first send. Default 60.
    package var maxTotalDelay: Double
    /// `429 TooManyRequests` (one device flooded) waits at least this long, seconds. Default 1.
    package var tooManyRequestsDelay: Double
    /// Fraction of each delay that is randomised (0 = none, 1 = full jitter). Default 0.5.
    package var jitter: Double
    /// Whether a timed-out request is re-sent (APNs may have delivered it: at-least-once). Default true.
    package var retryTimeouts: Bool
    /// `429 TooManyProviderTokenUpdates` waits at least this long before the request is re-sent, seconds.
    /// Default 1.
    package var tokenUpdateRejectedDelay: Double
    /// A request rejected with `TooManyProviderTokenUpdates` is re-sent until this many seconds after its first
    /// send; then it fails as a configuration fault. Default 1500 (25 minutes: the 20-minute floor plus margin).
    package var tokenUpdateRejectedWindow: Double

    package init(
        maxAttempts: Int = 5, baseDelay: Double = 0.2, maxDelay: Double = 10, maxTotalDelay: Double = 60,
        tooManyRequestsDelay: Double = 1, jitter: Double = 0.5, retryTimeouts: Bool = true,
        tokenUpdateRejectedDelay: Double = 1, tokenUpdateRejectedWindow: Double = 25 * 60
    ) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxTotalDelay = maxTotalDelay
        self.tooManyRequestsDelay = tooManyRequestsDelay
        self.jitter = jitter
        self.retryTimeouts = retryTimeouts
        self.tokenUpdateRejectedDelay = tokenUpdateRejectedDelay
        self.tokenUpdateRejectedWindow = tokenUpdateRejectedWindow
    }

    /// The result of one attempt.
    package enum Outcome: Sendable, Equatable {
        case response(status: Int, reason: APNsReason?)
        case transport(APNsTransportError.Kind)
    }

    /// What to do next.
    package enum Decision: Sendable, Equatable {
        /// The outcome is final.
        case finish
        /// Send again after this many seconds.
        case retry(after: Double)
        /// Refresh the provider token and send again at once (allowed once per request).
        case refreshTokenAndRetry
        /// `TooManyProviderTokenUpdates`: adopt a newer token if one exists (then send at once), else send again
        /// after this many seconds.
        case retryAfterTokenUpdateRejected(after: Double)
        /// Final, and the credentials are at fault.
        case configurationFault
    }

    /// - Parameters:
    ///   - attempts: attempts made so far, including the one that produced `outcome` (≥ 1).
    ///   - elapsed: seconds since the first attempt was sent.
    ///   - tokenRefreshed: whether this request already had its one `ExpiredProviderToken` retry.
    ///   - random: a number in `0..<1` for jitter.
    ///   - tokenUpdateRejections: how many `TooManyProviderTokenUpdates` answers this request got so far (this one
    ///     included); they are not counted in `attempts`.
    package func decide(
        _ outcome: Outcome, attempts: Int, elapsed: Double, tokenRefreshed: Bool, random: Double,
        tokenUpdateRejections: Int = 0
    ) -> Decision {
        switch outcome {
        case .response(let status, let reason):
            if status == 200 { return .finish }
            switch ProviderTokenState.recovery(after: reason, refreshed: tokenRefreshed) {
            case .refresh?:
                return .refreshTokenAndRetry
            case .resolveRejected?:
                let wait = delay(
                    attempts: max(1, tokenUpdateRejections), random: random, floor: tokenUpdateRejectedDelay)
                guard elapsed + wait <= tokenUpdateRejectedWindow else { return .configurationFault }
                return .retryAfterTokenUpdateRejected(after: wait)
            case .credentialFault?:
                return .configurationFault
            case nil:
                break
            }
            if status == 429 {
                return backoff(attempts: attempts, elapsed: elapsed, random: random, floor: tooManyRequestsDelay)
            }
            if status >= 500 { return backoff(attempts: attempts, elapsed: elapsed, random: random, floor: 0) }
            return .finish
        case .transport(.connection):
            // The first loss is re-sent at once: after GOAWAY the next connection is usually healthy.
            if attempts == 1 { return attempts < maxAttempts ? .retry(after: 0) : .finish }
            return backoff(attempts: attempts, step: attempts - 1, elapsed: elapsed, random: random, floor: 0)
        case .transport(.timeout):
            return retryTimeouts ? backoff(attempts: attempts, elapsed: elapsed, random: random, floor: 0) : .finish
        case .transport(.fatal):
            return .finish
        }
    }

    /// The delay before retry number `attempts` (1-based): `base·2^(attempts-1)`, capped, with its upper `jitter`
    /// share randomised, never below `floor`.
    package func delay(attempts: Int, random: Double, floor: Double = 0) -> Double {
        let exponent = Double(max(0, min(attempts - 1, 30)))
        let raw = min(maxDelay, baseDelay * pow2(exponent))
        let jittered = raw * (1 - jitter * min(max(random, 0), 1))
        return max(floor, jittered)
    }

    private func backoff(attempts: Int, step: Int? = nil, elapsed: Double, random: Double, floor: Double) -> Decision {
        guard attempts < maxAttempts else { return .finish }
        let wait = delay(attempts: step ?? attempts, random: random, floor: floor)
        guard elapsed + wait <= maxTotalDelay else { return .finish }
        return .retry(after: wait)
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        var remaining = Int(exponent)
        while remaining > 0 { value *= 2; remaining -= 1 }
        return value
    }
}
