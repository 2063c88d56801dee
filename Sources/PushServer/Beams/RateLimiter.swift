import Foundation
import Locking

/// What a limiter says about one request.
public enum RateDecision: Sendable, Equatable {
    case allowed
    /// Refused: answer 429 with `Retry-After: retryAfter` (whole seconds, at least 1).
    case limited(retryAfter: Int)
    /// Let through untracked because the table of clients is full (see `ClientTable`).
    case untracked
}

/// A map from client key to per-client state that cannot grow without bound.
///
/// Entries a predicate calls idle (a refilled bucket, an expired window) carry no information and are swept out:
/// at most once per `sweepInterval`, and whenever the table is full. When it is still full after a sweep, a new key
/// is not stored: `update` returns nil and the caller decides (the limiters let such requests through as
/// `.untracked`, so a flood of addresses cannot lock out newcomers, and count them). Pure: time is a parameter.
struct ClientTable<Entry> {
    private(set) var entries: [String: Entry] = [:]
    let capacity: Int
    let sweepInterval: Double
    private var lastSweep = -Double.infinity
    /// Keys refused since the start because the table was full.
    private(set) var overflows = 0

    init(capacity: Int, sweepInterval: Double = 60) {
        self.capacity = max(1, capacity)
        self.sweepInterval = sweepInterval
    }

    /// Runs `body` on the entry for `key` (made by `create` when missing).
    /// - Returns: `body`'s result, or nil when the key is new and the table is full of live entries.
    mutating func update<R>(
        _ key: String, now: Double, isIdle: (Entry) -> Bool, create: () -> Entry, _ body: (inout Entry) -> R
    ) -> R? {
        if now - lastSweep >= sweepInterval { sweep(now: now, isIdle) }
        if entries[key] == nil && entries.count >= capacity {
            // Sweep again on a full table, but not on every request of a flood (at most once a second).
            if now - lastSweep >= min(1, sweepInterval) { sweep(now: now, isIdle) }
            if entries.count >= capacity {
                overflows += 1
                return nil
            }
        }
        var entry = entries[key] ?? create()
        let result = body(&entry)
        entries[key] = entry
        return result
    }

    /// Changes the entry for `key` only if it exists.
    mutating func modifyExisting<R>(_ key: String, _ body: (inout Entry) -> R) -> R? {
        guard var entry = entries[key] else { return nil }
        let result = body(&entry)
        entries[key] = entry
        return result
    }

    private mutating func sweep(now: Double, _ isIdle: (Entry) -> Bool) {
        lastSweep = now
        entries = entries.filter { !isIdle($0.value) }
    }
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

/// Failed attempts per key in a fixed window: `maxFailures` within `window` seconds lock the key out for
/// `lockout` seconds. Pure logic.
struct FailureWindows {
    struct Window {
        var start: Double
        var failures: Int
        var lockedUntil: Double
    }

    let maxFailures: Int
    let window: Double
    let lockout: Double
    private(set) var table: ClientTable<Window>

    init(maxFailures: Int, window: Double, lockout: Double, capacity: Int) {
        self.maxFailures = max(1, maxFailures)
        self.window = max(window, 0.001)
        self.lockout = max(lockout, 0)
        self.table = ClientTable(capacity: capacity)
    }

    /// Whether `key` is locked out now. Does not store anything for an unknown key.
    mutating func check(_ key: String, now: Double) -> RateDecision {
        table.modifyExisting(key) { window -> RateDecision in
            window.lockedUntil > now ? .limited(retryAfter: TokenBuckets.seconds(window.lockedUntil - now)) : .allowed
        } ?? .allowed
    }

    /// Counts a failure; the `maxFailures`-th within one window locks the key.
    /// - Returns: `.limited` when this failure locked the key, `.untracked` when the table is full.
    @discardableResult
    mutating func recordFailure(_ key: String, now: Double) -> RateDecision {
        let (length, limit, lockout) = (window, maxFailures, self.lockout)
        let isIdle = { (window: Window) in window.lockedUntil <= now && now - window.start >= length }
        let decision = table.update(key, now: now, isIdle: isIdle,
                                    create: { Window(start: now, failures: 0, lockedUntil: 0) }) { window -> RateDecision in
            if now - window.start >= length {
                window.start = now
                window.failures = 0
            }
            window.failures += 1
            guard window.failures >= limit else { return .allowed }
            window.lockedUntil = max(window.lockedUntil, now + lockout)
            // A new window starts after the lockout, so a locked-out client gets `maxFailures` fresh tries.
            window.start = window.lockedUntil
            window.failures = 0
            return .limited(retryAfter: TokenBuckets.seconds(lockout))
        }
        return decision ?? .untracked
    }
}

/// The seconds since an arbitrary start that the limiters measure time in: monotonic, so wall-clock steps (NTP,
/// an operator's `date`) neither refill nor freeze buckets.
public typealias MonotonicSeconds = @Sendable () -> Double

/// The process's monotonic clock in seconds.
public let monotonicSeconds: MonotonicSeconds = {
    let start = ContinuousClock.now
    return {
        let elapsed = (ContinuousClock.now - start).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }
}()

/// A thread-safe `TokenBuckets` with its clock.
///
/// Keys are instance ids or client addresses. Beams allows 100 requests per second on the publish and customer
/// APIs and answers 429 above it; the device and reporting APIs get per-address and per-instance buckets.
public final class RateLimiter: Sendable {
    private let state: Locked<TokenBuckets>
    private let clock: MonotonicSeconds

    /// - Parameters:
    ///   - perSecond: sustained rate.
    ///   - burst: bucket size; defaults to one second's worth.
    ///   - maxKeys: keys tracked at once (see `ClientTable` for what happens beyond).
    ///   - clock: monotonic seconds; tests pass their own.
    public init(perSecond: Int, burst: Int? = nil, maxKeys: Int = 100_000, clock: @escaping MonotonicSeconds = monotonicSeconds) {
        state = Locked(TokenBuckets(rate: Double(perSecond), burst: Double(burst ?? perSecond), capacity: maxKeys))
        self.clock = clock
    }

    /// Takes `cost` tokens for `key`.
    public func take(_ key: String, cost: Double = 1) -> RateDecision {
        let now = clock()
        return state.withLock { $0.take(key, cost: cost, now: now) }
    }

    /// Keys currently tracked (for tests and metrics).
    public var trackedKeys: Int { state.withLock { $0.table.entries.count } }
}

/// A thread-safe `FailureWindows` with its clock: failed secret checks per client address.
public final class FailureThrottle: Sendable {
    private let state: Locked<FailureWindows>
    private let clock: MonotonicSeconds

    public init(maxFailures: Int, windowSeconds: Int, lockoutSeconds: Int, maxKeys: Int = 100_000,
                clock: @escaping MonotonicSeconds = monotonicSeconds) {
        state = Locked(FailureWindows(maxFailures: maxFailures, window: Double(windowSeconds),
                                      lockout: Double(lockoutSeconds), capacity: maxKeys))
        self.clock = clock
    }

    /// `.limited` while `key` is locked out.
    public func check(_ key: String) -> RateDecision {
        let now = clock()
        return state.withLock { $0.check(key, now: now) }
    }

    /// Counts a failed attempt by `key`.
    @discardableResult
    public func recordFailure(_ key: String) -> RateDecision {
        let now = clock()
        return state.withLock { $0.recordFailure(key, now: now) }
    }
}
