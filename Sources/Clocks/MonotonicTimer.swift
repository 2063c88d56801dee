import Dispatch

/// The one timer facility: every wait for a moment of `MonotonicClock` (a deadline, a retry delay, a lookup
/// timeout) goes through it, in a task (`sleep`) or as a callback for code that runs on threads rather than tasks
/// (`schedule`: a sender's retry, fired from a curl thread's answer).
///
/// Both take the time left until the deadline from `MonotonicClock` and hand it to the platform's timer as a
/// relative delay (the concurrency runtime's for `sleep`, Dispatch's for `schedule`), so no other clock's
/// instants appear in any signature, and the timers' own epochs never mix with this clock's readings.
package enum MonotonicTimer {
    /// Suspends until `deadline`. Throws `CancellationError` as soon as the task is cancelled.
    package static func sleep(until deadline: MonotonicInstant) async throws {
        try await sleep(for: deadline.remaining)
    }

    /// Suspends for `duration` (a negative one as zero). Throws `CancellationError` as soon as the task is cancelled.
    package static func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        try await Task.sleep(for: max(.zero, duration))
    }

    /// Runs `body` once, on a Dispatch worker, after `delay` (a negative one as zero; capped at a day). Its owner
    /// decides when it fires whether there is still something to do (a sender's retry asks its run's `RetryScope`,
    /// a lookup's timeout finds the answer taken), or keeps it from starting (`ScheduledCall.cancel`: a wait that
    /// ended before its deadline).
    @discardableResult
    package static func schedule(after delay: Duration, _ body: @escaping @Sendable () -> Void) -> ScheduledCall {
        let capped = min(max(.zero, delay), .seconds(86_400))
        let item = DispatchWorkItem(block: body)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(capped.nanoseconds)), execute: item)
        return ScheduledCall(item: item)
    }
}
