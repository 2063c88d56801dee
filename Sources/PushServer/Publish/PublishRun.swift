import APNsClient
import Foundation
import Logging
import PushStore
import Synchronization

/// The mutable state of one publish while it runs: the checkpoint tracker and the results not yet written.
///
/// A target's counters and device result are released to a checkpoint only once the watermark has passed it. A
/// target answered above the watermark is sent again if the node dies before the watermark reaches it; had its
/// counters been written already, the publish would count it twice (its totals would exceed its devices).
///
/// Results arrive on the APNs client's curl threads; everything here sits behind one `Mutex` and each callback
/// holds it for a few dictionary updates only.
final class PublishRun: Sendable {
    struct State {
        var tracker: CheckpointTracker
        /// Submitted targets not yet answered (final or abandoned).
        var outstanding = 0
        /// Released to the next checkpoint: results of targets at or below the watermark.
        var counters: [String: Int64] = [:]
        var deviceResults: [DeviceResult] = []
        /// Results (and retry counts) of targets above the watermark, by ref; bounded by the tracker's span.
        var held: [Int64: Held] = [:]
        /// Users publish: per user, whether any device was accepted / any failed (for v1.PublishToUsersAttempt).
        var usersAccepted: Set<String> = []
        var usersFailed: Set<String> = []
        var usersSeen: Set<String> = []
        /// Targets submitted by this run (never drained; for the publish's total).
        var submittedTotal: Int64 = 0
        /// Targets that got no final result (client shutdown).
        var abandoned = 0
        /// Set when delivery stopped (all answered, or paused); ends the checkpoint loop.
        var delivered = false
        /// Set when another worker holds the job's lease: this run stops sending and writes nothing more.
        var lost = false
    }

    struct Held {
        var counters: [String: Int64] = [:]
        var result: DeviceResult?
    }

    let claimed: ClaimedJob
    private let state: Mutex<State>

    init(claimed: ClaimedJob) {
        self.claimed = claimed
        self.state = Mutex(State(tracker: CheckpointTracker(resumingAfter: claimed.cursor)))
    }

    func submitted(_ target: Target) {
        state.withLock { state in
            state.tracker.submitted(target.ref)
            state.outstanding += 1
            state.submittedTotal += 1
            if let user = target.userID { state.usersSeen.insert(user) }
        }
    }

    func scanned(upTo cursor: Int64) {
        state.withLock { $0.tracker.scanned(upTo: cursor) }
    }

    /// Records a final result for `target`.
    func completed(_ target: Target, counters: [String: Int64], device: DeviceResult) {
        state.withLock { state in
            state.tracker.completed(target.ref)
            state.outstanding -= 1
            var entry = state.held[target.ref] ?? Held()
            entry.counters[PublishCounter.targets, default: 0] += 1
            for (key, value) in counters { entry.counters[key, default: 0] += value }
            entry.result = device
            state.held[target.ref] = entry
            if let user = target.userID {
                if device.status == 200 { state.usersAccepted.insert(user) } else { state.usersFailed.insert(user) }
            }
        }
    }

    /// Counts a request for `target` that was sent again (environment retry); the target stays outstanding.
    func add(_ counter: String, for target: Target) {
        state.withLock { $0.held[target.ref, default: Held()].counters[counter, default: 0] += 1 }
    }

    /// The target got no final result (client shutdown): it stays below the checkpoint, to be sent again.
    func abandoned(_ target: Target) {
        state.withLock { state in
            state.outstanding -= 1
            state.abandoned += 1
        }
    }

    var outstanding: Int { state.withLock { $0.outstanding } }
    var submittedTotal: Int64 { state.withLock { $0.submittedTotal } }
    var abandonedCount: Int { state.withLock { $0.abandoned } }
    var isDelivered: Bool { state.withLock { $0.delivered } }
    func markDelivered() { state.withLock { $0.delivered = true } }
    var isLost: Bool { state.withLock { $0.lost } }
    func markLost() { state.withLock { $0.lost = true } }

    /// Takes what a checkpoint must write: the watermark, and the counter deltas and device results of the targets
    /// at or below it.
    func drain() -> (cursor: Int64, counters: [String: Int64], results: [DeviceResult]) {
        state.withLock { state in
            let watermark = state.tracker.watermark
            // Bounded by the span between the oldest unanswered target and the newest submitted one.
            for (ref, entry) in state.held where ref <= watermark && entry.result != nil {
                for (key, value) in entry.counters { state.counters[key, default: 0] += value }
                if let result = entry.result { state.deviceResults.append(result) }
                state.held[ref] = nil
            }
            defer {
                state.counters.removeAll(keepingCapacity: true)
                state.deviceResults.removeAll(keepingCapacity: true)
            }
            return (state.tracker.watermark, state.counters, state.deviceResults)
        }
    }

    /// Puts back a drained batch whose checkpoint failed, so the next one writes it.
    func restore(counters: [String: Int64], results: [DeviceResult]) {
        state.withLock { state in
            for (key, value) in counters { state.counters[key, default: 0] += value }
            state.deviceResults.insert(contentsOf: results, at: 0)
        }
    }

    func userOutcome() -> (accepted: Set<String>, failed: Set<String>, seen: Set<String>) {
        state.withLock { ($0.usersAccepted, $0.usersFailed.subtracting($0.usersAccepted), $0.usersSeen) }
    }
}
