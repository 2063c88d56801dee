import Clocks
import Locking

/// A throttled publish's `DeliveryPacer` on the monotonic clock, shared by the publish's lanes (one rate per
/// publish, whatever its platforms). Each run has its own: a throttled publish never paces another.
///
/// Between its tokens the run holds no publish slot: a wait of at least `parkAfter` parks it (`PublishSlots`), and
/// when the token is due it queues for a slot again like any waiting run. Eight campaigns at one delivery a minute
/// used to hold the node's eight slots for as long as they lasted.
package final class PublishPacer: Sendable {
    private let bucket: Locked<DeliveryPacer>
    private let slots: PublishSlots?
    private let parkAfter: UInt64

    /// - Parameters:
    ///   - slots: the node's publish slots, given up while waiting for a token; nil keeps the slot.
    ///   - parkAfter: the shortest wait that gives the slot up (shorter ones are not worth a queue turn).
    init(perMinute: Int, slots: PublishSlots? = nil, parkAfter: Duration = .milliseconds(20)) {
        bucket = Locked(DeliveryPacer(perMinute: perMinute, now: MonotonicClock.now()))
        self.slots = slots
        let (seconds, attoseconds) = parkAfter.components
        self.parkAfter = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Changes the rate (an instance's budget share when the number of live nodes changes). The bucket starts
    /// again with one token, so a change never lets a burst through; the same rate changes nothing.
    func retune(perMinute: Int) {
        bucket.withLock {
            if $0.perMinute != max(1, perMinute) { $0 = DeliveryPacer(perMinute: perMinute, now: MonotonicClock.now()) }
        }
    }

    /// The current rate, in deliveries per minute.
    var perMinute: Int { bucket.withLock { $0.perMinute } }

    /// Waits for a token: a real deadline (the token's time), cut short when the run must stop; parked without a
    /// slot meanwhile, then back in a slot before it returns.
    /// - Returns: false when the run must stop (nothing may be sent).
    func waitForToken(_ run: PublishRun) async -> Bool {
        while true {
            let wait = bucket.withLock { $0.take(now: MonotonicClock.now()) }
            if wait == 0 { return !run.mustStop }
            let parked = wait >= parkAfter && slots?.park(run) == true
            await run.pause(for: .nanoseconds(Int64(clamping: wait)))
            if run.mustStop { return false }
            // Another lane of the run may have parked it: every lane waits for the slot before taking a token.
            if let slots, parked || !run.holdsSlot {
                guard await slots.resume(run) else { return false }
            }
        }
    }
}
