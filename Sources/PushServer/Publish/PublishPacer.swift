import Clocks
import Locking

/// A throttled publish's `DeliveryPacer` on the monotonic clock, shared by the publish's lanes (one rate per
/// publish, whatever its platforms). Each run has its own: a throttled publish never paces another.
final class PublishPacer: Sendable {
    private let bucket: Locked<DeliveryPacer>

    init(perMinute: Int) {
        bucket = Locked(DeliveryPacer(perMinute: perMinute, now: MonotonicClock.now()))
    }

    /// Waits for a token: a real deadline (the token's time), cut short when the run must stop.
    /// - Returns: false when the run must stop (nothing may be sent).
    func waitForToken(_ run: PublishRun) async -> Bool {
        while true {
            let wait = bucket.withLock { $0.take(now: MonotonicClock.now()) }
            if wait == 0 { return !run.mustStop }
            await run.pause(for: .nanoseconds(Int64(clamping: wait)))
            if run.mustStop { return false }
        }
    }
}
