import Locking

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
        let decision = table.update(
            key, now: now, isIdle: isIdle,
            create: { Window(start: now, failures: 0, lockedUntil: 0) }
        ) { window -> RateDecision in
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

/// A thread-safe `FailureWindows` with its clock: failed secret checks per client address.
package final class FailureThrottle: Sendable {
    private let state: Locked<FailureWindows>
    private let clock: MonotonicSeconds

    package init(
        maxFailures: Int, windowSeconds: Int, lockoutSeconds: Int, maxKeys: Int = 100_000,
        clock: @escaping MonotonicSeconds = monotonicSeconds
    ) {
        state = Locked(
            FailureWindows(
                maxFailures: maxFailures, window: Double(windowSeconds),
                lockout: Double(lockoutSeconds), capacity: maxKeys))
        self.clock = clock
    }

    /// `.limited` while `key` is locked out.
    package func check(_ key: String) -> RateDecision {
        let now = clock()
        return state.withLock { $0.check(key, now: now) }
    }

    /// Counts a failed attempt by `key`.
    @discardableResult
    package func recordFailure(_ key: String) -> RateDecision {
        let now = clock()
        return state.withLock { $0.recordFailure(key, now: now) }
    }
}
