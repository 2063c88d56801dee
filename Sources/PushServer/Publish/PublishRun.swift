import APNsClient
import Foundation
import Logging
import PushStore
import Synchronization

/// The mutable state of one publish while it runs: the checkpoint tracker and the results not yet written.
///
/// Results arrive on the APNs client's curl threads; everything here sits behind one `Mutex` and each callback
/// holds it for a few dictionary updates only.
final class PublishRun: Sendable {
    struct State {
        var tracker: CheckpointTracker
        /// Submitted targets not yet answered (final or abandoned).
        var outstanding = 0
        var counters: [String: Int64] = [:]
        var deviceResults: [DeviceResult] = []
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
            state.counters[PublishCounter.targets, default: 0] += 1
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
            for (key, value) in counters { state.counters[key, default: 0] += value }
            state.deviceResults.append(device)
            if let user = target.userID {
                if device.status == 200 { state.usersAccepted.insert(user) } else { state.usersFailed.insert(user) }
            }
        }
    }

    /// Counts a request that was sent again (environment retry); the target stays outstanding.
    func add(_ counter: String) {
        state.withLock { $0.counters[counter, default: 0] += 1 }
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

    /// Takes what a checkpoint must write: the watermark, counter deltas and device results.
    func drain() -> (cursor: Int64, counters: [String: Int64], results: [DeviceResult]) {
        state.withLock { state in
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
