import APNsClient
import Foundation
import Logging
import PushStore
import Locking

/// The mutable state of one publish while it runs: the checkpoint tracker and the results not yet written.
///
/// Every final result goes to the next checkpoint with its counters. Results above the watermark (answers arrive
/// out of order) are also listed as `answered`, which the store remembers until the watermark passes them: a
/// resumed run skips them, so neither the notification nor its counters are repeated after a crash. What a crash
/// can repeat is bounded: the unanswered requests in flight, plus the answers not yet checkpointed.
///
/// Results arrive on the APNs client's curl threads; everything here sits behind one lock and each callback
/// holds it for a few dictionary updates only.
final class PublishRun: Sendable {
    struct State {
        var tracker: CheckpointTracker
        /// Submitted targets not yet answered (final or abandoned).
        var outstanding = 0
        /// Released to the next checkpoint.
        var counters: [String: Int64] = [:]
        var deviceResults: [DeviceResult] = []
        /// Refs of `deviceResults` (to tell which are above the watermark at drain time).
        var resultRefs: [Int64] = []
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

    let claimed: ClaimedJob
    private let state: Locked<State>

    init(claimed: ClaimedJob) {
        self.claimed = claimed
        self.state = Locked(State(tracker: CheckpointTracker(resumingAfter: claimed.cursor)))
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
            state.counters[PublishCounter.targets, default: 0] += 1
            for (key, value) in counters { state.counters[key, default: 0] += value }
            state.deviceResults.append(device)
            state.resultRefs.append(target.ref)
            if let user = target.userID {
                if device.status == 200 { state.usersAccepted.insert(user) } else { state.usersFailed.insert(user) }
            }
        }
    }

    /// Counts a request for `target` that was sent again (environment retry); the target stays outstanding.
    func add(_ counter: String, for target: Target) {
        state.withLock { $0.counters[counter, default: 0] += 1 }
    }

    /// Results waiting for the next checkpoint.
    var pendingResults: Int { state.withLock { $0.deviceResults.count } }

    /// The target got no final result (client shutdown): it stays below the checkpoint, to be sent again.
    func abandoned(_ target: Target) {
        state.withLock { state in
            state.outstanding -= 1
            state.abandoned += 1
        }
    }

    var outstanding: Int { state.withLock { $0.outstanding } }
    var watermark: Int64 { state.withLock { $0.tracker.watermark } }
    var submittedTotal: Int64 { state.withLock { $0.submittedTotal } }
    var abandonedCount: Int { state.withLock { $0.abandoned } }
    var isDelivered: Bool { state.withLock { $0.delivered } }
    func markDelivered() { state.withLock { $0.delivered = true } }
    var isLost: Bool { state.withLock { $0.lost } }
    func markLost() { state.withLock { $0.lost = true } }

    /// Takes what a checkpoint must write: the watermark, counter deltas, device results, and the answered refs
    /// above the watermark.
    func drain() -> Checkpoint {
        state.withLock { state in
            let watermark = state.tracker.watermark
            let batch = Checkpoint(cursor: watermark, counters: state.counters, results: state.deviceResults,
                                   answered: state.resultRefs.filter { $0 > watermark })
            state.counters.removeAll(keepingCapacity: true)
            state.deviceResults.removeAll(keepingCapacity: true)
            state.resultRefs.removeAll(keepingCapacity: true)
            return batch
        }
    }

    /// One checkpoint's worth of progress.
    struct Checkpoint: Sendable {
        var cursor: Int64
        var counters: [String: Int64]
        var results: [DeviceResult]
        var answered: [Int64]
        var isEmpty: Bool { counters.isEmpty && results.isEmpty }
    }

    /// Puts back a drained batch whose checkpoint failed, so the next one writes it.
    func restore(_ batch: Checkpoint) {
        state.withLock { state in
            for (key, value) in batch.counters { state.counters[key, default: 0] += value }
            state.deviceResults.insert(contentsOf: batch.results, at: 0)
            state.resultRefs.insert(contentsOf: batch.results.map(\.device), at: 0)
        }
    }

    func userOutcome() -> (accepted: Set<String>, failed: Set<String>, seen: Set<String>) {
        state.withLock { ($0.usersAccepted, $0.usersFailed.subtracting($0.usersAccepted), $0.usersSeen) }
    }
}
