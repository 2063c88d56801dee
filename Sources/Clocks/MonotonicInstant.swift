/// A reading of `MonotonicClock`, typed: the deadlines the engine, the service group and the store's node lock
/// compare and wait for (`WaitableState.wait(until:deadline:)`, `waitAtMost(until:_:)`, `MonotonicTimer.sleep`).
/// Arithmetic is in `Duration`, so no caller converts nanoseconds or seconds by hand.
public struct MonotonicInstant: Sendable, Hashable, Comparable {
    /// The reading, nanoseconds since an arbitrary start (see `MonotonicClock.now()`).
    public let nanoseconds: UInt64

    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// The clock's reading now.
    public static var now: MonotonicInstant { MonotonicInstant(nanoseconds: MonotonicClock.now()) }

    /// How long until this instant; zero once it has passed.
    public var remaining: Duration { MonotonicInstant.now.duration(to: self) }

    /// Whether this instant is now or in the past.
    public var hasPassed: Bool { MonotonicClock.now() >= nanoseconds }

    /// The time from this instant to `other`; zero when `other` is earlier.
    public func duration(to other: MonotonicInstant) -> Duration {
        other.nanoseconds > nanoseconds ? .nanoseconds(Int64(clamping: other.nanoseconds - nanoseconds)) : .zero
    }

    /// `duration` later (a negative one counts as zero; saturating far in the future).
    public static func + (instant: MonotonicInstant, duration: Duration) -> MonotonicInstant {
        let (sum, overflow) = instant.nanoseconds.addingReportingOverflow(duration.nanoseconds)
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}
