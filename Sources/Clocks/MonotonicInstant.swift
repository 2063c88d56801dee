/// A reading of `MonotonicClock`, typed: the deadlines the engine, the service group and the store's node lock
/// compare and wait for (`WaitableState.wait(until:deadline:)`, `waitAtMost(until:_:)`, `MonotonicTimer.sleep`).
/// Arithmetic is in `Duration`, so no caller converts nanoseconds or seconds by hand.
package struct MonotonicInstant: Sendable, Hashable, Comparable {
    /// The reading, nanoseconds since an arbitrary start (see `MonotonicClock.now()`).
    package let nanoseconds: UInt64

    package init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// The clock's reading now.
    package static var now: MonotonicInstant { MonotonicInstant(nanoseconds: MonotonicClock.now()) }

    /// How long until this instant; zero once it has passed.
    package var remaining: Duration { MonotonicInstant.now.duration(to: self) }

    /// Whether this instant is now or in the past.
    package var hasPassed: Bool { MonotonicClock.now() >= nanoseconds }

    /// The time from this instant to `other`; zero when `other` is earlier.
    package func duration(to other: MonotonicInstant) -> Duration {
        other.nanoseconds > nanoseconds ? .nanoseconds(Int64(clamping: other.nanoseconds - nanoseconds)) : .zero
    }

    /// `duration` later (a negative one counts as zero; saturating far in the future).
    package static func + (instant: MonotonicInstant, duration: Duration) -> MonotonicInstant {
        let (sum, overflow) = instant.nanoseconds.addingReportingOverflow(duration.nanoseconds)
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    package static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}
