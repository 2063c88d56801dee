import Locking

/// Web Push subscriptions whose deliveries keep ending without an answer from their push service (connection
/// failures and timeouts after the sender's retries, or a destination the address rules refuse): after
/// `failures` such deliveries in a row spanning at least `seconds`, the subscription is invalidated with the reason
/// `SubscriptionUnreachable`, as a 404/410 invalidates it with `SubscriptionGone`. Any answer from the push service
/// (accepted or not) ends the streak. A pure state machine; times are seconds on the caller's monotonic clock.
///
/// Kept in memory per instance: a restart, or another node, starts counting again (it only delays the removal). At
/// most `capacity` subscriptions are followed at once; past that, new streaks are not started (nothing is removed
/// early).
package struct UnreachableSubscriptionBook {
    private struct Streak {
        var first: Double
        var count: Int
    }

    let failures: Int
    let seconds: Double
    let capacity: Int
    private var streaks: [Int64: Streak] = [:]

    package init(failures: Int, seconds: Double, capacity: Int = 100_000) {
        self.failures = max(1, failures)
        self.seconds = max(0, seconds)
        self.capacity = max(1, capacity)
    }

    /// Records one delivery's final result for `device`. - Returns: true when the subscription is to be invalidated
    /// now (its streak is then forgotten).
    package mutating func record(_ device: Int64, unanswered: Bool, now: Double) -> Bool {
        guard unanswered else {
            streaks[device] = nil
            return false
        }
        guard var streak = streaks[device] ?? (streaks.count < capacity ? Streak(first: now, count: 0) : nil) else {
            return false
        }
        streak.count += 1
        if streak.count >= failures && now - streak.first >= seconds {
            streaks[device] = nil
            return true
        }
        streaks[device] = streak
        return false
    }

    /// Subscriptions with a streak running.
    package var following: Int { streaks.count }
}

/// `UnreachableSubscriptionBook` behind a lock, applied to the Web Push verdicts of one instance's deliveries.
package final class UnreachableSubscriptions: Sendable {
    private let book: Locked<UnreachableSubscriptionBook>

    package init(failures: Int, seconds: Double) {
        book = Locked(UnreachableSubscriptionBook(failures: failures, seconds: seconds))
    }

    /// The verdict to record for `device`: `verdict` itself, or `SubscriptionUnreachable` with the device
    /// invalidated when this unanswered delivery completes its streak.
    package func judge(_ verdict: PlatformVerdict, device: Int64, now: Double) -> PlatformVerdict {
        let unanswered: Bool
        switch verdict {
        // A retry ended by cancel or the message's deadline says nothing about the push service either way.
        case .unfinished, .failed("Cancelled", _, _), .failed("Expired", _, _): return verdict
        case .failed("TransportError", 0, .none), .failed("DestinationRefused", 0, .none): unanswered = true
        default: unanswered = false
        }
        guard book.withLock({ $0.record(device, unanswered: unanswered, now: now) }) else { return verdict }
        return .failed("SubscriptionUnreachable", status: 0, effect: .badToken)
    }
}
