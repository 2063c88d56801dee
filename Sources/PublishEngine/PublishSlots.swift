import Locking
import Observability

/// The node's publish slots (`PublishSlotScheduler`) with the runs they belong to: a grant marks the run as
/// holding its slot and wakes whatever of it waits for one (`PublishRun.waitForSlot`).
///
/// The scheduler and the runs' slot marks change under one lock, so a lane that parks the run and another that
/// resumes it at the same moment cannot leave the run believing the opposite of the scheduler.
final class PublishSlots: Sendable {
    typealias Key = JobScheduler.RunKey

    private struct State {
        var scheduler: PublishSlotScheduler<Key>
        var runs: [Key: PublishRun] = [:]
        /// Whether a run was ever admitted: the gauges have no series before.
        var admitted = false

        mutating func mark(_ granted: [Key]) {
            for key in granted { runs[key]?.slotChanged(held: true) }
        }
    }

    private let state: Locked<State>
    /// The counts last written to the gauges (nil: none yet).
    private let reported = Locked<(holding: Int, waiting: Int, parked: Int)?>(nil)
    /// Told when a parked run freed a slot: the claim loop may claim again (`JobScheduler.wake`).
    private let slotFreed = Locked<(@Sendable () -> Void)?>(nil)

    /// - Parameters:
    ///   - metrics: where `push_publish_slots_busy`, `push_publish_jobs_waiting` and
    ///   `push_publish_jobs_parked` go, as they are when `/metrics` is read.
    ///   - weights: grants per round-robin turn by lower-cased instance id (`instances[].publishWeight`).
    ///   - instanceFloor: an instance holding no slot gets one even when all are taken
    ///   (`PublishSlotScheduler.instanceFloor`).
    init(
        slots: Int, expressSlots: Int, maxParked: Int, weights: [String: Int] = [:], instanceFloor: Bool = true,
        metrics: Metrics? = nil
    ) {
        state = Locked(
            State(
                scheduler: PublishSlotScheduler(
                    slots: slots, expressSlots: expressSlots,
                    maxParked: maxParked, weights: weights,
                    instanceFloor: instanceFloor)))
        metrics?.addCollector { [weak self] metrics in self?.report(to: metrics) }
    }

    static func declareMetrics(_ metrics: Metrics) {
        metrics.declare(.publishSlotsBusy)
        metrics.declare(.publishJobsWaiting)
        metrics.declare(.publishJobsParked)
    }

    /// Writes the gauges when `/metrics` is read, not at each change: a run's start and end changed them several
    /// times each (grant, release, admission), and a gauge update costs ~4,500 instructions (its series key built,
    /// two locks; docs/BENCHMARKS.md "The engine's run of a publish with no targets"). The values read are the
    /// same: the counts as they are.
    private func report(to metrics: Metrics) {
        guard state.withLock({ $0.admitted }) else { return }
        // Only the gauges whose count changed since the last read (`Metrics.render` runs one scrape's collectors at a
        // time, so the counts read here are the newest written).
        let now = counts
        reported.withLock { last in
            if last?.holding != now.holding { metrics.set(.publishSlotsBusy, to: Double(now.holding)) }
            if last?.waiting != now.waiting { metrics.set(.publishJobsWaiting, to: Double(now.waiting)) }
            if last?.parked != now.parked { metrics.set(.publishJobsParked, to: Double(now.parked)) }
            last = now
        }
    }

    /// Replaces the instances' weights (the served set changed: run-time instances, a reload); runs already
    /// holding slots keep them.
    func setWeights(_ weights: [String: Int]) { state.withLock { $0.scheduler.weights = weights } }

    /// Sets what hears that a parked run freed a slot.
    func onSlotFreed(_ body: @escaping @Sendable () -> Void) { slotFreed.withLock { $0 = body } }

    /// Whether the node should claim another publish (see `PublishSlotScheduler.wantsClaim`).
    var wantsClaim: Bool { state.withLock { $0.scheduler.wantsClaim } }

    /// Whether the node should claim a publish of an instance with no run here, for its floor slot (see
    /// `PublishSlotScheduler.wantsFloorClaim`).
    var wantsFloorClaim: Bool { state.withLock { $0.scheduler.wantsFloorClaim } }

    /// Whether a regular slot is free (a shard, always bulk, is claimed only then: it never waits in an express
    /// slot's stead while another node could deliver it).
    var regularSlotFree: Bool { state.withLock { $0.scheduler.regularHeld < $0.scheduler.slots } }

    /// Runs holding a slot, waiting for one, and parked.
    var counts: (holding: Int, waiting: Int, parked: Int) {
        state.withLock {
            (
                $0.scheduler.regularHeld + $0.scheduler.expressHeld + $0.scheduler.floorHeld,
                $0.scheduler.waitingCount,
                $0.scheduler.parkedCount
            )
        }
    }

    /// A claimed run asks for a slot; it sends once `run.waitForSlot()` returns.
    func admit(_ run: PublishRun, lane: PublishSlotScheduler<Key>.Lane) {
        let key = Key(run.claimed)
        state.withLock { state in
            state.runs[key] = run
            state.admitted = true
            state.mark(state.scheduler.admit(key, instance: run.claimed.job.instanceID.lowercased(), lane: lane))
        }
    }

    /// The run waits for something other than a slot: it gives its slot up unless too many runs are parked.
    /// - Returns: whether it parked (it must `resume` before sending again).
    func park(_ run: PublishRun) -> Bool {
        let key = Key(run.claimed)
        let (parked, passedOn) = state.withLock { state -> (Bool, Bool) in
            let (parked, granted) = state.scheduler.park(key)
            if parked { state.runs[key]?.slotChanged(held: false) }
            state.mark(granted)
            return (parked, !granted.isEmpty)
        }
        guard parked else { return false }
        // Nobody here waited for the slot: a queued publish may take it.
        if !passedOn { slotFreed.withLock { $0 }?() }
        return true
    }

    /// A parked run wants to send again: it queues for a slot and waits for it, or until it must stop.
    /// - Returns: false when the run must stop.
    func resume(_ run: PublishRun) async -> Bool {
        let key = Key(run.claimed)
        state.withLock { state in
            if state.scheduler.place(of: key) == .parked { state.mark(state.scheduler.resume(key)) }
        }
        return await run.waitForSlot()
    }

    /// The run ended: its slot (or its place in the queue) goes to the next run.
    func remove(_ run: PublishRun) {
        let key = Key(run.claimed)
        state.withLock { state in
            // Only the run registered under the key: a duplicate claim's run never was.
            guard state.runs[key] === run else { return }
            state.runs[key] = nil
            state.mark(state.scheduler.remove(key))
        }
    }
}
