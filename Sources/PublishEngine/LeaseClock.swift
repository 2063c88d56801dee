import Clocks

/// How long a run may still act on its lease when it cannot reach the store: the self-fence of a node cut off
/// from the database (or whose renewals hang behind a failing disk or a stalled connection).
///
/// The store lets another node claim the job once the lease's expiry passes; a node that cannot renew does not
/// learn that it lost the job, and would keep sending devices the new owner sends again. So each run keeps, on
/// the monotonic clock, the moment its lease is last known to be held: the time its last successful renewal (or
/// its claim) was *sent*, plus the lease, minus a safety margin. Taking the send time, not the answer's, means a
/// renewal that hangs and then succeeds cannot extend the lease past what the store granted; the margin covers
/// the wall clocks of two nodes disagreeing (leases are stored as wall time) and a run noticing a little late.
///
/// Pure: "now" is an argument (a `MonotonicClock.now()` reading in the engine, any number in tests).
package struct LeaseClock: Sendable, Equatable {
    /// The lease, in nanoseconds.
    let duration: UInt64
    /// Subtracted from each renewal's lease, in nanoseconds.
    let margin: UInt64
    /// The monotonic reading after which this run may not hand out another target.
    package private(set) var validUntil: UInt64

    /// The share of a lease kept back as the margin: with renewals every third of the lease, two renewals in a row
    /// may fail (a store restarting) before the run fences itself.
    package static func margin(for lease: Duration) -> Duration { lease / 5 }

    /// - Parameter claimSentAt: when the claim that granted the lease was sent (a reading of `MonotonicClock`).
    package init(claimSentAt: UInt64, lease: Duration, margin: Duration) {
        duration = lease.nanoseconds
        self.margin = min(margin.nanoseconds, lease.nanoseconds)
        validUntil = 0
        renewed(sentAt: claimSentAt)
    }

    /// A renewal sent at `sentAt` succeeded. An older renewal answering after a newer one never moves the
    /// deadline back.
    package mutating func renewed(sentAt: UInt64) {
        let (until, overflow) = sentAt.addingReportingOverflow(duration - margin)
        validUntil = max(validUntil, overflow ? .max : until)
    }

    /// Whether the lease can no longer be counted on at `now`.
    package func hasExpired(at now: UInt64) -> Bool { now >= validUntil }

    /// The time left until `validUntil` (zero once it passed).
    package func remaining(at now: UInt64) -> Duration {
        .nanoseconds(Int64(clamping: validUntil > now ? validUntil - now : 0))
    }
}
