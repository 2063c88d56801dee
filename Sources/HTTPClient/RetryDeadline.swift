import Foundation

/// The moment after which a notification is no longer worth sending, and the rule that no retry is scheduled past
/// it: the earlier of the publish's delivery window (`x_delivery.expiresAt`) and the message's own lifetime (FCM
/// `time_to_live`, Web Push `TTL`, APNs `apns-expiration`), counted from the notification's first hand-over to the
/// sender. A pure value: the senders pass `secondsLeft(at:)` to their retry policies, tested without clocks.
package struct RetryDeadline: Sendable, Hashable {
    /// The deadline; nil when neither bound applies.
    package var at: Date?

    /// - Parameters:
    ///   - expiresAt: the publish's delivery window, if any.
    ///   - timeToLive: the message's lifetime in seconds, if it has one (`0`: now or never, so no retry at all).
    ///   - start: when the message was first handed to the sender.
    package init(expiresAt: Date?, timeToLive: Double?, from start: Date) {
        let lifetime = timeToLive.map { start.addingTimeInterval(max(0, $0)) }
        switch (expiresAt, lifetime) {
        case (let window?, let life?): at = min(window, life)
        case (let window?, nil): at = window
        case (nil, let life?): at = life
        case (nil, nil): at = nil
        }
    }

    /// A deadline at `at` (nil: none).
    package init(at: Date?) {
        self.at = at
    }

    /// No deadline.
    package static let none = RetryDeadline(at: nil)

    /// Seconds from `now` until the deadline (negative once it passed); nil when there is none.
    package func secondsLeft(at now: Date) -> Double? {
        at.map { $0.timeIntervalSince(now) }
    }

    /// Whether a retry `delay` seconds after a moment `secondsLeft` before the deadline would go out past it.
    /// A retry landing exactly on the deadline still goes out; with no deadline (`secondsLeft` nil) none is late.
    package static func isLate(delay: Double, secondsLeft: Double?) -> Bool {
        guard let secondsLeft else { return false }
        return delay > secondsLeft
    }
}
