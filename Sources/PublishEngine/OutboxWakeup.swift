import Clocks
import Foundation

/// The timer of an outbox loop (webhooks, the Beams bridge) that sleeps until its next due row or until new work
/// wakes it through the same stream.
extension AsyncStream<Void>.Continuation {
    /// Yields a wake-up at `date` (a retry's time, a lease's end or a breaker's trial), at most `longest` seconds
    /// from now, unless the returned task is cancelled first (the loop was woken otherwise).
    func wake(at date: Date, longest: TimeInterval) -> Task<Void, Never> {
        let seconds = min(max(date.timeIntervalSinceNow, 0), longest)
        // Rounded up: waking a moment early would find nothing due yet and sleep again for the remainder.
        let delay = Duration.milliseconds(Int64((seconds * 1000).rounded(.up)) + 1)
        return Task { [self] in
            do {
                try await MonotonicTimer.sleep(for: delay)
                yield()
            } catch {
                // Cancelled: woken otherwise.
            }
        }
    }
}
