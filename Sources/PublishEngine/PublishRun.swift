import APNsClient
import BeamsModel
import Clocks
import Foundation
import HTTPClient
import Locking
import Logging
import PushStore

/// The mutable state of one publish while it runs: the checkpoint tracker and the results not yet written.
///
/// Every final result goes to the next checkpoint with its counters. Results above the watermark (answers arrive
/// out of order) are also listed as `answered`, which the store remembers until the watermark passes them: a
/// resumed run skips them, so neither the notification nor its counters are repeated after a crash. What a crash
/// can repeat is bounded: the unanswered requests in flight, plus the answers not yet checkpointed.
///
/// Results arrive on the APNs client's curl threads; everything here sits behind one lock and each callback
/// holds it for a few dictionary updates only. The run's loops (feeder, checkpoints, lease) wait on this state:
/// each change wakes the ones it concerns, so none of them polls.
package final class PublishRun: Sendable {
    struct State {
        var tracker: CheckpointTracker
        /// Submitted targets not yet answered (final or abandoned).
        var outstanding = 0
        /// Released to the next checkpoint.
        var counters: PublishCounters = [:]
        /// Final results since the last drain, added to `counters` as `.targets` there: counted as an integer per
        /// result, the counter's dictionary entry (its key hashed, looked up and written) was about 450 instructions
        /// per notification (docs/BENCHMARKS.md, issue 26).
        var targetsSinceDrain: Int64 = 0
        var deviceResults: [DeviceResult] = []
        /// Results drained into a checkpoint being written: still unwritten, so they count against the limit on
        /// waiting results until the write succeeds (or they are restored).
        var writing = 0
        /// Refs of `deviceResults` (to tell which are above the watermark at drain time).
        var resultRefs: [Int64] = []
        /// Refs answered without a device result (broadcast channels), for the next checkpoint's `answered`.
        var channelRefs: [Int64] = []
        /// The runs of consecutive answered refs above the watermark that checkpoints of this run handed to the
        /// store, first ref by last ref (see `drain`). Runs the watermark has passed are dropped once there are many.
        var answeredRuns: [Int64: Int64] = [:]
        /// Users publish: per user, whether any device was accepted / any failed (for v1.PublishToUsersAttempt).
        var usersAccepted: Set<String> = []
        var usersFailed: Set<String> = []
        var usersSeen: Set<String> = []
        /// Targets submitted by this run (never drained; for the publish's total).
        var submittedTotal: Int64 = 0
        /// Targets that got no final result (client shutdown).
        var abandoned = 0
        /// How the run ends: why sending must stop, whether delivery ended, the slot, the last checkpoint.
        var machine = PublishRunStateMachine()
        /// The lease as far as this node can vouch for it (nil: no self-fence, a run built outside the scheduler).
        var lease: LeaseClock?
        /// A Live Activity publish: its results name token rows, not devices (see `PublishRunner.checkpoint`).
        var tokenRows = false
        /// A shard's counters as last written (its claim's, plus every checkpoint since): a shard checkpoint
        /// writes totals, not increments.
        var writtenTotals: PublishCounters = [:]
        /// Whether this run has tried to write a checkpoint (written or not: a write whose answer was lost may
        /// have committed).
        var triedCheckpoint = false
        /// Targets this run is done with: answered, or passed over because the publish has no part for their
        /// platform. The completion estimate's progress (a local-time publish's targets due in a later round are
        /// still to do; those answered by an earlier run are in its claim's counters).
        var passed: Int64 = 0
        /// The completion estimate's smoothed rate (`CompletionEstimator`).
        var estimator = CompletionEstimator()
        /// The estimate counters as the store will hold them once every drained batch is written (the claim's,
        /// then each new value): a new value goes into the next checkpoint as the difference.
        var estimateCounters: PublishCounters = [:]
        /// The latest estimate (nil: none), for `/metrics`.
        var estimate: CompletionEstimator.Estimate?
        /// The run stopped sending: no estimate any more.
        var estimateCleared = false
        /// `push_notifications_total` since it was last handed to `/metrics` (`NotificationTally`).
        var tally = NotificationTally()

        /// Sending must end (the engine stops, the lease is gone, the publish was cancelled or expired).
        var mustStop: Bool { machine.mustStop }
        var delivered: Bool { machine.isDelivered }
        var lost: Bool { machine.stops.contains(.leaseLost) }
    }

    /// What the run's waits read, so that an update looks only at the waits on what it changed: `submitted` and
    /// `completed` come once per notification each, and both looked at the lease, fence and checkpoint loops' waits
    /// (a dictionary's iteration copying each waiter) every time. With topics, 5,000-device fan-out counted:
    /// `completed` 4,400 → 3,350 instructions per notification, `submitted` 2,300 → 800 (docs/BENCHMARKS.md, issue
    /// 26). Updates off the per-notification path keep the default, `all`, and look at every wait.
    enum Wakes {
        /// Targets outstanding and results waiting for (or being written by) a checkpoint.
        static let progress = WaitTopics(rawValue: 1 << 0)
        /// The state machine (stops, delivery, slot, the run's end) and the lease.
        static let machine = WaitTopics(rawValue: 1 << 1)
    }

    let claimed: ClaimedJob
    /// What the claim holds a lease on (the job, or one shard of it): the run's store calls go through it.
    let held: PublishLease
    private let state: WaitableState<State>
    /// The FCM and Web Push retries of this run that wait for their moment: `cancel()` ends them at once.
    let retries = RetryScope()

    /// - Parameters:
    ///   - held: what the claim holds a lease on (a whole job by default).
    ///   - lease: the claim's lease on the monotonic clock; the run fences itself when it passes.
    init(claimed: ClaimedJob, held: PublishLease = .job(splitter: nil), lease: LeaseClock? = nil) {
        self.claimed = claimed
        self.held = held
        var state = State(tracker: CheckpointTracker(resumingAfter: claimed.cursor))
        state.lease = lease
        state.writtenTotals = claimed.counters
        for counter in PublishCounters.Counter.estimate {
            state.estimateCounters[counter] = claimed.counters[counter] ?? 0
        }
        self.state = WaitableState(state)
    }

    func submitted(_ target: Target) {
        // The two fields the update needs, read before it: a closure that reads `target` captured a copy of the
        // whole target (its strings retained and released) per notification.
        let ref = target.ref
        let user = target.userID
        state.update(waking: Wakes.progress) { state in
            state.tracker.submitted(ref)
            state.outstanding += 1
            state.submittedTotal += 1
            if let user { state.usersSeen.insert(user) }
        }
    }

    func scanned(upTo cursor: Int64) {
        // The tracker is read by no wait.
        state.update(waking: []) { $0.tracker.scanned(upTo: cursor) }
    }

    /// Records a final result for `target` on `platform`.
    /// - Returns: the results' metric series to add to `/metrics` now (every `NotificationTally.batch` results,
    ///   and each one once the run has ended), nil while they wait for more.
    func completed(_ target: Target, counters: PublishCounters, device: DeviceResult, on platform: Platform)
        -> NotificationTally?
    {
        let ref = target.ref
        let user = target.userID
        return state.update(waking: Wakes.progress) { state -> NotificationTally? in
            state.tracker.completed(ref)
            state.outstanding -= 1
            state.passed += 1
            state.targetsSinceDrain += 1
            state.counters.add(counters)
            state.deviceResults.append(device)
            state.resultRefs.append(ref)
            if let user {
                if device.isAccepted { state.usersAccepted.insert(user) } else { state.usersFailed.insert(user) }
            }
            state.tally.add(platform, status: device.status, reason: device.reason)
            guard state.tally.count >= NotificationTally.batch || state.machine.isEnded else { return nil }
            return state.tally.take()
        }
    }

    /// The results' metric series not yet added to `/metrics` (at each checkpoint and when the run ends).
    func takeTally() -> NotificationTally { state.update { $0.tally.take() } }

    /// A broadcast channel (target ref `ref`, no device) was handed to the sender.
    func submittedChannel(ref: Int64) {
        state.update(waking: Wakes.progress) { state in
            state.tracker.submitted(ref)
            state.outstanding += 1
            state.submittedTotal += 1
        }
    }

    /// Records a broadcast channel's final result: counters only, no device row to update.
    func completedChannel(ref: Int64, counters: PublishCounters) {
        state.update(waking: Wakes.progress) { state in
            state.tracker.completed(ref)
            state.outstanding -= 1
            state.passed += 1
            state.targetsSinceDrain += 1
            state.counters.add(counters)
            state.channelRefs.append(ref)
        }
    }

    /// A broadcast channel got no final result (shutdown): it stays below the checkpoint, to be sent again.
    func abandonedChannel() {
        state.update { state in
            state.outstanding -= 1
            state.abandoned += 1
        }
    }

    /// Counts a request for `target` that was sent again (environment retry); the target stays outstanding.
    func add(_ counter: PublishCounters.Counter, for target: Target) {
        state.update { $0.counters.add(counter) }
    }

    /// The feeder passed over `count` targets without sending them (the publish has no part for their platform):
    /// they count as done for the completion estimate only.
    func passedOver(_ count: Int) {
        guard count > 0 else { return }
        state.update { $0.passed += Int64(count) }
    }

    // MARK: Completion estimate

    /// Whether the completion estimate's clock runs (delivery started).
    var estimateStarted: Bool { state.read { $0.estimator.lastAt != nil } }
    /// The latest completion estimate of this run (nil: none yet, or none possible).
    var estimate: CompletionEstimator.Estimate? { state.read { $0.estimate } }

    /// Observes the run's progress at `now` (monotonic seconds; the estimator takes an observation at most every
    /// `CompletionEstimator.interval`), estimates its completion for `total` targets (nil: unknown) with the
    /// targets it has left now, and queues the estimate counters for the next checkpoint
    /// (`PublishCounters.Counter.estimate`), which the status sums over shards.
    /// - Parameter done: targets done before this run (its claim's answered count).
    /// - Returns: the estimate (nil: none, or the run stopped sending).
    @discardableResult
    func observeProgress(total: Int64?, done earlier: Int64, bounds: CompletionEstimator.Bounds, at now: Double)
        -> CompletionEstimator.Estimate?
    {
        state.update { state -> CompletionEstimator.Estimate? in
            guard !state.estimateCleared else { return nil }
            let done = earlier + state.passed
            state.estimator.observe(done: done, at: now)
            let estimate = total.flatMap {
                state.estimator.estimate(remaining: max(0, $0 - done), at: now, bounds: bounds)
            }
            state.estimate = estimate
            var values: PublishCounters = [.estimateRemaining: 0, .estimateRateMilli: 0]
            if let estimate {
                values[.estimateRemaining] = estimate.remaining
                // The effective rate: remaining over the estimated seconds, so that a later round's bound holds
                // in the status too, which only sees the sums (`PublishEstimate`).
                let effective = Double(estimate.remaining) / max(estimate.secondsRemaining, 0.001)
                values[.estimateRateMilli] = max(1, Int64((effective * 1000).rounded()))
            }
            Self.queueEstimateCounters(values, in: &state)
            return estimate
        }
    }

    /// Delivery ended (or paused, or this round is over): the run no longer sends, so its estimate counters go
    /// back to 0 with its last checkpoint, and its estimate is gone.
    func clearEstimate() {
        state.update { state in
            state.estimate = nil
            state.estimateCleared = true
            Self.queueEstimateCounters(
                [.estimateRemaining: 0, .estimateRateMilli: 0],
                in: &state)
        }
    }

    private static func queueEstimateCounters(_ values: PublishCounters, in state: inout State) {
        for (name, value) in values.all {
            let delta = value - (state.estimateCounters[name] ?? 0)
            guard delta != 0 else { continue }
            let pending = (state.counters[name] ?? 0) + delta
            state.counters[name] = pending == 0 ? nil : pending
            state.estimateCounters[name] = value
        }
    }

    /// Results waiting for the next checkpoint.
    var pendingResults: Int { state.read { $0.deviceResults.count } }

    /// The target got no final result (client shutdown): it stays below the checkpoint, to be sent again.
    func abandoned(_ target: Target) {
        state.update { state in
            state.outstanding -= 1
            state.abandoned += 1
        }
    }

    var outstanding: Int { state.read { $0.outstanding } }
    var watermark: Int64 { state.read { $0.tracker.watermark } }
    var submittedTotal: Int64 { state.read { $0.submittedTotal } }
    var abandonedCount: Int { state.read { $0.abandoned } }
    var isDelivered: Bool { state.read { $0.delivered } }
    var isLost: Bool { state.read { $0.lost } }
    func markLost() { state.update { $0.machine.leaseLost() } }
    var isStopped: Bool { state.read { $0.machine.stops.contains(.engineStopped) } }
    /// Asks the run to stop sending (engine shutdown); wakes every wait below.
    func stop() { state.update { $0.machine.engineStopped() } }
    /// Whether sending must end. Reads the monotonic clock too: a lane about to send notices a lease deadline
    /// that passed even before the runner's fence timer fires (a loaded machine runs timers late).
    var mustStop: Bool {
        let (stop, lease) = state.read { ($0.mustStop, $0.lease) }
        if stop { return true }
        guard let lease, lease.hasExpired(at: MonotonicClock.now()) else { return false }
        _ = fenceIfLeaseExpired()
        return true
    }
    var isFenced: Bool { state.read { $0.machine.stops.contains(.fenced) } }

    /// A lease renewal sent at `sentAt` (a `MonotonicClock` reading taken before sending it) succeeded.
    func leaseRenewed(sentAt: UInt64) {
        state.update { $0.lease?.renewed(sentAt: sentAt) }
    }

    /// Fences the run when its lease deadline passed.
    /// - Returns: the time left until that deadline; nil when the run is fenced (now or earlier) or has no lease clock.
    func fenceIfLeaseExpired(now: UInt64 = MonotonicClock.now()) -> Duration? {
        state.update { state -> Duration? in
            guard let lease = state.lease, !state.machine.stops.contains(.fenced) else { return nil }
            if lease.hasExpired(at: now) {
                _ = state.machine.fenced()
                return nil
            }
            return lease.remaining(at: now)
        }
    }

    /// Waits until delivery ended, the lease was lost or fenced, or `deadline` passed.
    func waitForFence(deadline: MonotonicInstant) async {
        await state.wait(
            on: Wakes.machine, until: { $0.delivered || $0.lost || $0.machine.stops.contains(.fenced) },
            deadline: deadline)
    }
    /// Stops sending for good: the publish was cancelled. Retries waiting in the senders end now (`Cancelled`), so
    /// the run ends as soon as the requests on the wire are answered.
    func cancel() {
        state.update { $0.machine.cancelled() }
        retries.cancel()
    }
    var isCancelled: Bool { state.read { $0.machine.stops.contains(.cancelled) } }
    /// Stops sending for good: the publish's delivery window closed.
    func expire() { state.update { $0.machine.expired() } }
    /// A retry would have gone out after the publish's `expiresAt`: it was not scheduled, the publish ends `expired`.
    func retryOutlivedWindow() { state.update { $0.machine.retryOutlivedTheWindow() } }
    /// Every lane's pump has returned: nothing more is handed to a sender by this run.
    func endSubmission() { state.update { $0.machine.submissionStopped() } }
    /// The runner returned.
    func markEnded() { state.update { $0.machine.runEnded() } }

    // MARK: The runner's steps (`PublishRunStateMachine`)

    /// The runner read the plan: deliver, or end before sending anything.
    func started(cancelRequested: Bool, windowClosed: Bool, roundBased: Bool) -> PublishRunStateMachine.Action {
        state.update {
            $0.machine.started(cancelRequested: cancelRequested, windowClosed: windowClosed, roundBased: roundBased)
        }
    }
    /// The run ends before delivering (failed, split, or its shards had all ended).
    func endedBeforeDelivery() { state.update { $0.machine.endedBeforeDelivery() } }
    /// Delivery ended; wakes the checkpoint, lease and fence loops (a one-device publish does not wait out the
    /// checkpoint interval). - Returns: the next step (the last checkpoint).
    func fed(complete: Bool) -> PublishRunStateMachine.Action { state.update { $0.machine.fed(complete: complete) } }
    /// The last checkpoint was tried. - Returns: the next step.
    func checkpointed(_ outcome: PublishRunStateMachine.CheckpointOutcome) -> PublishRunStateMachine.Action {
        state.update { $0.machine.checkpointed(outcome) }
    }
    /// After `.reschedule`: whether a later round is due. - Returns: the next step.
    func nextRound(known: Bool) -> PublishRunStateMachine.Action { state.update { $0.machine.nextRound(known: known) } }
    /// The publish's plan was read: a Live Activity publish targets token rows, not devices.
    func planned(_ mode: PublishPlan.Mode) {
        guard case .liveActivity = mode else { return }
        state.update { $0.tokenRows = true }
    }
    /// Its results name Live Activity token rows, not devices: no device's health changes.
    var targetsTokenRows: Bool { state.read { $0.tokenRows } }

    /// Waits until the run hands nothing more to a sender (or it ended, or `deadline` passed).
    /// - Returns: whether submission ended.
    func waitForSubmissionEnd(deadline: MonotonicInstant) async -> Bool {
        await state.wait(
            on: Wakes.machine, until: { $0.machine.submissionEnded || $0.machine.isEnded }, deadline: deadline)
    }

    /// Waits until the runner returned or `deadline` passed. - Returns: whether it returned.
    func waitForRunEnd(deadline: MonotonicInstant) async -> Bool {
        await state.wait(on: Wakes.machine, until: { $0.machine.isEnded }, deadline: deadline)
    }

    // MARK: Waiting (wake-ups, no polling)

    /// Waits until every submitted target has an answer (or was abandoned by the sender's shutdown).
    func waitForAnswers() async {
        await state.wait(on: Wakes.progress) { $0.outstanding == 0 }
    }

    /// Waits while `limit` results wait for a checkpoint (the store cannot write, say), until a checkpoint makes
    /// room or sending must stop. - Returns: false when sending must stop.
    func waitForRoom(limit: Int) async -> Bool {
        let full = state.read { $0.deviceResults.count + $0.writing >= limit && !$0.mustStop }
        if full {
            await state.wait(on: [Wakes.progress, Wakes.machine]) {
                $0.deviceResults.count + $0.writing < limit || $0.mustStop
            }
        }
        return !mustStop
    }

    /// Waits until `batch` results wait for a checkpoint, delivery ended, or `deadline` passed.
    func waitForCheckpoint(batch: Int, deadline: MonotonicInstant) async {
        // Broadcast channels have no device result but count as results all the same.
        await state.wait(
            on: [Wakes.progress, Wakes.machine],
            until: { $0.deviceResults.count + $0.channelRefs.count >= batch || $0.delivered },
            deadline: deadline)
    }

    /// Waits until delivery ended, the lease was lost, or `deadline` passed. - Returns: whether the run ended.
    func waitForEnd(deadline: MonotonicInstant) async -> Bool {
        await state.wait(on: Wakes.machine, until: { $0.delivered || $0.lost }, deadline: deadline)
    }

    /// The node's slots granted this run a slot, or took it back when it parked (`PublishSlots`).
    func slotChanged(held: Bool) { state.update { $0.machine.paced(holdsSlot: held) } }
    var holdsSlot: Bool { state.read { $0.machine.holdsSlot } }

    /// Waits until the run holds a publish slot (at once when it does), cut short when the run must stop.
    /// - Returns: false when the run must stop.
    func waitForSlot() async -> Bool {
        await state.wait(on: Wakes.machine) { $0.machine.holdsSlot || $0.mustStop }
        return !mustStop
    }

    /// Waits `interval` before a store write is tried again, cut short when the run must stop.
    func pause(for interval: Duration) async {
        await state.wait(on: Wakes.machine, until: { $0.mustStop }, deadline: .now + interval)
    }

    /// Waits `interval` before the run's last checkpoint is tried again, cut short only when the engine stops or
    /// the lease is lost: a run that stopped sending (fenced, cancelled, expired) still waits between attempts
    /// instead of retrying in a tight loop.
    func pauseBeforeLastCheckpoint(for interval: Duration) async {
        await state.wait(
            on: Wakes.machine, until: { $0.machine.stops.contains(.engineStopped) || $0.lost },
            deadline: .now + interval)
    }

    /// Runs the watermark has passed are dropped from `State.answeredRuns` once it holds this many (they are never
    /// looked up again, so they only take room).
    static let answeredRunsKept = 4096

    /// Takes what a checkpoint must write: the watermark, counter deltas, device results, and the answered refs
    /// above the watermark.
    func drain() -> Checkpoint {
        state.update { state in
            let watermark = state.tracker.watermark
            // One pass into one array sized once: concatenating and then filtering built two arrays per checkpoint.
            var answered: [Int64] = []
            answered.reserveCapacity(state.resultRefs.count + state.channelRefs.count)
            for ref in state.resultRefs where ref > watermark { answered.append(ref) }
            for ref in state.channelRefs where ref > watermark { answered.append(ref) }
            Self.continueRuns(of: &answered, above: watermark, in: &state)
            if state.targetsSinceDrain != 0 {
                state.counters.add(.targets, state.targetsSinceDrain)
                state.targetsSinceDrain = 0
            }
            var batch = Checkpoint(
                cursor: watermark, counters: state.counters, results: state.deviceResults, answered: answered)
            batch.channelRefs = state.channelRefs
            state.channelRefs.removeAll()
            state.writing = state.deviceResults.count
            state.counters = [:]
            state.deviceResults.removeAll(keepingCapacity: true)
            state.resultRefs.removeAll(keepingCapacity: true)
            return batch
        }
    }

    /// Adds to `answered` (this checkpoint's refs above `watermark`) the refs of each run an earlier checkpoint
    /// wrote that one of its runs continues, so that the store gets the run from its first ref and extends the row
    /// it holds for it (a range that starts where a stored one starts keeps the larger end, on every backend)
    /// instead of adding a row for the continuation, to be deleted again when the watermark passes it. Answers of
    /// different connections interleave, so a checkpoint's runs are short (3.5 refs on average in a 5,000-device
    /// fan-out, docs/BENCHMARKS.md "Answered refs as ranges"); counted there, the SQLite checkpoint's insert and
    /// delete of ranges took 1,000 instructions per notification less, this 400 more (issue 26). Every ref added
    /// was answered: the set the store remembers is the same, in fewer rows.
    static func continueRuns(of answered: inout [Int64], above watermark: Int64, in state: inout State) {
        if state.answeredRuns.count > answeredRunsKept {
            state.answeredRuns = state.answeredRuns.filter { $0.key > watermark }
        }
        guard !answered.isEmpty else { return }
        answered.sort()
        var continued: [Int64] = []
        var index = 0
        while index < answered.count {
            let first = answered[index]
            var last = first
            index += 1
            // `last + 1` cannot overflow: refs are row ids, far below `Int64.max`.
            while index < answered.count, answered[index] <= last + 1 {
                last = max(last, answered[index])
                index += 1
            }
            // A run whose first ref is at or below the watermark is not extended: the store keeps refs above it
            // only, so the row would start elsewhere.
            if let start = state.answeredRuns.removeValue(forKey: first - 1), start > watermark {
                continued.append(contentsOf: start..<first)
                state.answeredRuns[last] = start
            } else {
                state.answeredRuns[last] = first
            }
        }
        answered.append(contentsOf: continued)
    }

    /// One checkpoint's worth of progress.
    struct Checkpoint: Sendable {
        var cursor: Int64
        var counters: PublishCounters
        var results: [DeviceResult]
        var answered: [Int64]
        /// Broadcast channels answered in this batch (restored with it when the write fails).
        var channelRefs: [Int64] = []
        var isEmpty: Bool { counters.isEmpty && results.isEmpty }
    }

    /// A drained batch is about to be written (`triedCheckpoint`).
    func writingCheckpoint() {
        // Read by no wait.
        state.update(waking: []) { $0.triedCheckpoint = true }
    }

    /// Whether this run has tried to write a checkpoint.
    var triedCheckpoint: Bool { state.read { $0.triedCheckpoint } }

    /// The drained batch was written.
    func written() {
        state.update { $0.writing = 0 }
    }

    /// The counters a checkpoint of `batch` leaves: those last written plus the batch's.
    func totals(with batch: Checkpoint) -> PublishCounters {
        state.read { state in
            var totals = state.writtenTotals
            totals.add(batch.counters)
            return totals
        }
    }

    /// The drained batch was written, leaving the counters at `totals`.
    func written(totals: PublishCounters) {
        state.update { state in
            state.writing = 0
            state.writtenTotals = totals
        }
    }

    /// Puts back a drained batch whose checkpoint failed, so the next one writes it.
    func restore(_ batch: Checkpoint) {
        state.update { state in
            state.writing = 0
            state.counters.add(batch.counters)
            state.deviceResults.insert(contentsOf: batch.results, at: 0)
            state.resultRefs.insert(contentsOf: batch.results.map(\.device), at: 0)
            state.channelRefs.insert(contentsOf: batch.channelRefs, at: 0)
        }
    }

    func userOutcome() -> (accepted: Set<String>, failed: Set<String>, seen: Set<String>) {
        state.read { ($0.usersAccepted, $0.usersFailed.subtracting($0.usersAccepted), $0.usersSeen) }
    }
}
