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
/// - Wake-ups: once empty, it waits for `quantum` tokens (a fifth of the burst, 10 ms at 60,000 per minute), so
///   the feeder sleeps about 100 times a second at most instead of once per delivery.
/// - A ceiling, not a guarantee: time lost while the senders were full (another publish saturating APNs) is made
///   up only up to the burst, so a throttled publish then finishes later rather than catching up in a rush.
package struct DeliveryPacer: Sendable, Equatable {
    /// Deliveries per minute (at least 1).
    let perMinute: Int
    /// Nanoseconds between two tokens.
    package let interval: UInt64
    /// Most tokens the bucket holds.
    package let burst: UInt64
    /// Tokens an empty bucket waits for before it lets deliveries go again.
    let quantum: UInt64
    /// Tokens held, in nanoseconds of refill (`tokens × interval`): integers, so no rounding drifts.
    private(set) var credit: UInt64
    private(set) var updated: UInt64

    /// - Parameters:
    ///   - perMinute: deliveries per minute, at least 1 (smaller values are raised to 1).
    ///   - now: a monotonic reading in nanoseconds.
    package init(perMinute: Int, now: UInt64) {
        self.perMinute = max(1, perMinute)
        let rate = UInt64(max(1, perMinute))
        // 60 s / rate, at least 1 ns: rates beyond 60 billion per minute are not pacing.
        interval = max(1, 60_000_000_000 / rate)
        burst = max(1, rate / 1200)
        quantum = max(1, burst / 5)
        credit = interval
        updated = now
    }

    /// Takes a token when one is there. - Returns: 0 when a delivery may go now (the token is taken), otherwise
    /// the nanoseconds until the next token (nothing is taken; ask again then).
    package mutating func take(now: UInt64) -> UInt64 {
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
        // `quantum` ≤ `burst`, so `quantum × interval` ≤ `limit` and cannot overflow when `limit` did not.
        let wanted = capacity.overflow ? UInt64.max : quantum * interval
        return wanted > credit ? wanted - credit : interval - credit
    }
}
