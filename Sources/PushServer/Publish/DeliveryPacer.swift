/// Paces one throttled publish (`throttlePerMinute`): a token bucket as a pure value, time passed in as monotonic
/// nanoseconds, so it is tested without sleeping.
///
/// Not `TokenBuckets` (the API rate limiters): those are keyed tables that start full and answer whole seconds
/// for `Retry-After`; pacing needs one bucket, waits in nanoseconds, and must start empty.
///
/// - Evenness: the bucket holds at most `burst` tokens (50 ms of the rate, at least 1), so any one-second window
///   carries the rate ± `burst` deliveries; at 60,000 per minute that is 1,000 ± 50 per second.
/// - Restarts: a run starts with one token, not a full bucket, so a resumed publish continues at its rate from
///   its checkpoint instead of bursting.
struct DeliveryPacer: Sendable, Equatable {
    /// Nanoseconds between two tokens.
    let interval: UInt64
    /// Most tokens the bucket holds.
    let burst: UInt64
    /// Tokens held, in nanoseconds of refill (`tokens × interval`): integers, so no rounding drifts.
    private(set) var credit: UInt64
    private(set) var updated: UInt64

    /// - Parameters:
    ///   - perMinute: deliveries per minute, at least 1 (smaller values are raised to 1).
    ///   - now: a monotonic reading in nanoseconds.
    init(perMinute: Int, now: UInt64) {
        let rate = UInt64(max(1, perMinute))
        // 60 s / rate, at least 1 ns: rates beyond 60 billion per minute are not pacing.
        interval = max(1, 60_000_000_000 / rate)
        burst = max(1, rate / 1200)
        credit = interval
        updated = now
    }

    /// Takes a token when one is there. - Returns: 0 when a delivery may go now (the token is taken), otherwise
    /// the nanoseconds until the next token (nothing is taken; ask again then).
    mutating func take(now: UInt64) -> UInt64 {
        let capacity = burst.multipliedReportingOverflow(by: interval)
        let limit = capacity.overflow ? UInt64.max : capacity.partialValue
        if now > updated {
            let (sum, overflow) = credit.addingReportingOverflow(now - updated)
            credit = overflow ? limit : min(limit, sum)
            updated = now
        }
        if credit >= interval {
            credit -= interval
            return 0
        }
        return interval - credit
    }
}
