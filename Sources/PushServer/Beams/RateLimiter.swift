import Foundation

/// A token bucket per key (instance id): `rate` requests per second with a burst of `rate`.
///
/// Beams allows 100 requests per second on the publish and customer APIs and answers 429 above it. The clock is
/// passed in, so tests move time instead of sleeping.
public final class RateLimiter: @unchecked Sendable {
    // @unchecked: `buckets` is only touched while holding `lock`.
    private let lock = NSLock()
    private var buckets: [String: Bucket] = [:]
    private let rate: Double
    private let burst: Double

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    /// - Parameter perSecond: sustained rate; also the burst size.
    public init(perSecond: Int) {
        rate = Double(perSecond)
        burst = Double(perSecond)
    }

    /// Takes one token for `key`; false when the caller must answer 429.
    public func allow(_ key: String, now: Double = ProcessInfo.processInfo.systemUptime) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
        bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
        bucket.updated = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        buckets[key] = bucket
        return allowed
    }
}
