import Clocks
import Foundation
import Locking

/// What a limiter says about one request.
package enum RateDecision: Sendable, Equatable {
    case allowed
    /// Refused: answer 429 with `Retry-After: retryAfter` (whole seconds, at least 1).
    case limited(retryAfter: Int)
    /// Let through untracked because the table of clients is full (see `ClientTable`).
    case untracked
}

/// Token buckets per key: `rate` tokens per second up to `burst`; a request takes `cost` tokens. Pure logic.
struct TokenBuckets {
    struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let rate: Double
    let burst: Double
    private(set) var table: ClientTable<Bucket>

    /// - Parameters:
    ///   - rate: tokens per second (> 0).
    ///   - burst: bucket size (≥ 1).
    ///   - capacity: most keys tracked at once.
    init(rate: Double, burst: Double, capacity: Int) {
        self.rate = max(rate, .leastNonzeroMagnitude)
        self.burst = max(1, burst)
        self.table = ClientTable(capacity: capacity)
    }

    mutating func take(_ key: String, cost: Double = 1, now: Double) -> RateDecision {
        let (rate, burst) = (self.rate, self.burst)
        // A bucket that has refilled completely is the same as no bucket.
        let isIdle = { (bucket: Bucket) in bucket.tokens + max(0, now - bucket.updated) * rate >= burst }
        let decision = table.update(key, now: now, isIdle: isIdle, create: { Bucket(tokens: burst, updated: now) }) {
            bucket -> RateDecision in
            bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
            bucket.updated = now
            // A request costing more than the whole bucket is charged the whole bucket, so it can ever pass.
            let charge = min(max(cost, 0), burst)
            guard bucket.tokens >= charge else {
                return .limited(retryAfter: Self.seconds((charge - bucket.tokens) / rate))
            }
            bucket.tokens -= charge
            return .allowed
        }
        return decision ?? .untracked
    }

    /// Whole seconds to wait, rounded up, at least 1, and small enough for any header.
    static func seconds(_ interval: Double) -> Int {
        guard interval.isFinite else { return 86_400 }
        return Int(min(86_400, max(1, interval.rounded(.up))))
    }
}

/// The seconds since an arbitrary start that the limiters measure time in: monotonic, so wall-clock steps (NTP,
/// an operator's `date`) neither refill nor freeze buckets.
package typealias MonotonicSeconds = @Sendable () -> Double

/// The process's monotonic clock (`MonotonicClock`) in seconds.
package let monotonicSeconds: MonotonicSeconds = { MonotonicClock.seconds() }

/// A thread-safe `TokenBuckets` with its clock.
///
/// Keys are instance ids or client addresses. Beams allows 100 requests per second on the publish and customer
/// APIs and answers 429 above it; the device and reporting APIs get per-address and per-instance buckets.
package final class RateLimiter: Sendable {
    private let state: Locked<TokenBuckets>
    private let clock: MonotonicSeconds
    /// The sustained rate it was built with.
    package let perSecond: Int

    /// - Parameters:
    ///   - perSecond: sustained rate.
    ///   - burst: bucket size; defaults to one second's worth.
    ///   - maxKeys: keys tracked at once (see `ClientTable` for what happens beyond).
    ///   - clock: monotonic seconds; tests pass their own.
    package init(
        perSecond: Int, burst: Int? = nil, maxKeys: Int = 100_000, clock: @escaping MonotonicSeconds = monotonicSeconds
    ) {
        state = Locked(TokenBuckets(rate: Double(perSecond), burst: Double(burst ?? perSecond), capacity: maxKeys))
        self.clock = clock
        self.perSecond = perSecond
    }

    /// Takes `cost` tokens for `key`.
    package func take(_ key: String, cost: Double = 1) -> RateDecision {
        let now = clock()
        return state.withLock { $0.take(key, cost: cost, now: now) }
    }

    /// Keys currently tracked (for tests and metrics).
    package var trackedKeys: Int { state.withLock { $0.table.entries.count } }
}
