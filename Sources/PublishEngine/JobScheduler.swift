import Clocks
import Foundation
import Locking
import PushStore

/// Claims queued publishes and runs them side by side, each in a `PublishRunner`; which of them send at a time is
/// the node's publish slots' decision (`PublishSlots`: `concurrentPublishes` slots shared round robin across
/// instances, express slots for small publishes, a floor slot for an instance holding none, paced runs parked
/// without one between their tokens).
///
/// It wakes when a publish is enqueued on this node (`wake()`) or a run ends, and claims until the slots are full
/// or the queue is empty, taking first the jobs of the instances with the fewest runs here (`ClaimPreference`);
/// with the slots full it still claims a job of an instance with no run here, for that instance's floor slot. On a shared database (`QueueNotifying`) other nodes' publishes, splits and cancels wake
/// it too. What nothing announces (expired leases of a dead node, or anything while the listening connection is
/// down) is found by polling, every `pollInterval`.
///
/// On a backend that splits publishes (`ShardedPublishQueue`), a slot runs a whole job or one shard of a split
/// one: when no job is claimable it claims a shard, so every node delivers part of a large publish.
final class JobScheduler: Sendable {
    private struct Control {
        var runs: [RunKey: PublishRun] = [:]
        var stopping = false
        /// Jobs cancelled while running with no run here yet: a claim of this node that raced with the cancel
        /// registers its run already cancelled. Bounded (`maxPendingCancels`); entries go when a run registers.
        var pendingCancels: Set<PublishJobID> = []
        /// The scheduled-publish timer: when it fires, and its task.
        var timer: (due: Date, task: Task<Void, Never>)?
        /// Whether a run was ever registered: `push_publish_jobs_running` has no series before.
        var claimed = false
    }

    /// A run's key: its job, and its shard when it delivers one shard of a split publish.
    struct RunKey: Hashable {
        var job: PublishJobID
        var shard: Int?
        init(_ claimed: ClaimedJob) {
            job = claimed.id
            shard = claimed.shard?.number
        }
    }

    /// Cancelled jobs remembered for a racing claim; beyond it an arbitrary one is forgotten (such entries are for
    /// jobs held by a dead process or another node, which end them when they are claimed again).
    static let maxPendingCancels = 1024

    private let context: PublishContext
    private let control = WaitableState(Control())
    private let wakeStream: AsyncStream<Void>
    private let wakeContinuation: AsyncStream<Void>.Continuation

    init(context: PublishContext) {
        self.context = context
        (wakeStream, wakeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let wake = wakeContinuation
        context.slots.onSlotFreed { wake.yield() }
        // Written when `/metrics` is read, not as each run starts and ends (~4,500 instructions a gauge update,
        // docs/BENCHMARKS.md "The engine's run of a publish with no targets"): the count as it is.
        context.metrics.addCollector { [control] metrics in
            guard let running = control.read({ $0.claimed ? $0.runs.count : nil }) else { return }
            metrics.set(.publishJobsRunning, to: Double(running))
        }
    }

    /// Tells the scheduler a job may be waiting.
    func wake() { wakeContinuation.yield() }

    /// The runs in progress.
    var runs: [PublishRun] { control.read { Array($0.runs.values) } }

    /// Claims and runs jobs until `stop()`; returns when every run has ended.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.pollQueue() }
            listenForNotices()
            // Jobs left queued by an earlier process (a restart, a shutdown pause) start at once.
            wake()
            for await _ in wakeStream {
                while let run = await claimIfIdle() {
                    group.addTask {
                        await PublishRunner(context: self.context, run: run).execute()
                        self.ended(run)
                    }
                }
                await armTimer()
            }
            cancelTimer()
        }
    }

    /// Arms one timer for the earliest scheduled publish (a real deadline: nothing else announces that a
    /// publish's time has come), replacing a later one. It wakes the claim loop, which claims the publish and arms
    /// the timer for the next.
    private func armTimer() async {
        let due: Date?
        do {
            due = try await context.store.nextPublishDue(now: Date())
        } catch {
            // The poll wakes the loop again within `pollInterval`; StoreHealth reports outages.
            context.logger.debug("Reading the next scheduled publish failed", ["error": "\(error)"])
            return
        }
        guard let due else { return }
        let delay = max(0, due.timeIntervalSinceNow)
        let deadline = MonotonicInstant.now + .milliseconds(Int64(saturating: (delay * 1000).rounded(.up)))
        let old = control.update { control -> Task<Void, Never>? in
            guard !control.stopping else { return nil }
            if let timer = control.timer, timer.due <= due { return nil }
            let previous = control.timer?.task
            let task = Task { [weak self] in
                guard (try? await MonotonicTimer.sleep(until: deadline)) != nil else { return }
                self?.timerFired(due)
            }
            control.timer = (due, task)
            return previous
        }
        old?.cancel()
    }

    private func timerFired(_ due: Date) {
        control.update { control in
            if control.timer?.due == due { control.timer = nil }
        }
        wake()
    }

    private func cancelTimer() {
        control.update { control -> Task<Void, Never>? in
            defer { control.timer = nil }
            return control.timer?.task
        }?.cancel()
    }

    /// Stops the job's runs on this node (one, or several shards of a split publish), if any: each stops handing
    /// targets to the senders, waits for the answers in flight and ends `cancelled`. - Returns: the runs, empty
    /// when none runs here (it then ends when claimed).
    func cancel(_ job: PublishJobID) -> [PublishRun] {
        let runs = control.update { control -> [PublishRun] in
            let runs = control.runs.filter { $0.key.job == job }.map(\.value)
            if !runs.isEmpty { return runs }
            if control.pendingCancels.count >= Self.maxPendingCancels, let any = control.pendingCancels.first {
                control.pendingCancels.remove(any)
            }
            control.pendingCancels.insert(job)
            return []
        }
        for run in runs { run.cancel() }
        return runs
    }

    /// Subscribes to other nodes' announcements, when the store makes them: new work wakes the claim loop, a
    /// cancel stops the job's runs here at once (without it they stop at their next lease renewal).
    private func listenForNotices() {
        guard let notifying = context.store.queueNotices else { return }
        _ = notifying.listen { [weak self] notice in
            guard let self else { return }
            switch notice {
            case .work:
                self.wake()
            case .cancelled(let job):
                let runs = self.control.read { control in control.runs.filter { $0.key.job == job }.map(\.value) }
                for run in runs { run.cancel() }
            }
        }
    }

    /// Stops claiming and asks every run to stop sending (each checkpoints and hands the rest back to the queue).
    func stop() {
        let runs = control.update { control -> [PublishRun] in
            control.stopping = true
            return Array(control.runs.values)
        }
        for run in runs { run.stop() }
        wakeContinuation.finish()
        cancelTimer()
    }

    /// Waits until no run has a notification in flight.
    func waitForAnswers() async {
        await withDiscardingTaskGroup { group in
            for run in runs { group.addTask { await run.waitForAnswers() } }
        }
    }

    /// Wakes the claim loop every `pollInterval` (a real deadline: nothing announces other nodes' jobs) and
    /// publishes the queue depth.
    private func pollQueue() async {
        var nextHeartbeat = MonotonicInstant.now
        while true {
            if nextHeartbeat.hasPassed {
                nextHeartbeat = .now + context.settings.heartbeatInterval
                await heartbeat()
            }
            let stopping = await control.wait(until: { $0.stopping }, deadline: .now + context.settings.pollInterval)
            if stopping {
                await leave()
                return
            }
            wake()
            if let depth = try? await context.store.queueDepth() {
                context.metrics.set(.publishQueueDepth, to: Double(depth))
            }
        }
    }

    /// Records this node as alive in a shared database, and publishes how many nodes are.
    private func heartbeat() async {
        guard let sharded = context.store.sharding else { return }
        let settings = context.settings
        if let live = try? await sharded.heartbeat(
            nodeID: settings.workerID, version: settings.version, now: Date(),
            liveWithin: settings.nodeLiveWindow)
        {
            context.metrics.set(.nodesLive, to: Double(live))
            settings.liveNodesChanged(live)
            context.budgets.setLiveNodes(live)
        }
    }

    /// Removes this node's heartbeat row on a clean stop (a node killed outright ages out after 30 s instead).
    private func leave() async {
        guard let sharded = context.store.sharding else { return }
        do {
            try await sharded.leave(nodeID: context.settings.workerID)
        } catch {
            context.logger.debug("Removing this node's heartbeat failed; it ages out", ["error": "\(error)"])
        }
    }

    private func ended(_ run: PublishRun) {
        run.markEnded()
        // Results counted after the run's last checkpoint (a run that lost its lease): each later one goes to
        // `/metrics` at once (`PublishRun.completed`).
        run.takeTally().apply(to: context.metrics)
        context.slots.remove(run)
        control.update { control in control.runs[RunKey(run.claimed)] = nil }
        wake()
    }

    /// Users publishes to at most this many users are small: first in their instance's queue for a slot, and
    /// entitled to the express slots.
    static let smallPublishUsers = 10

    /// How a claimed publish competes for a slot: small is known from the claim alone (its kind and targets).
    static func lane(of claimed: ClaimedJob) -> PublishSlotScheduler<RunKey>.Lane {
        claimed.shard == nil && claimed.job.kind == .users && claimed.job.targets.count <= smallPublishUsers
            ? .small : .bulk
    }

    /// Claims a job when a slot is free. - Returns: its run, registered (and already stopped when the engine
    /// began stopping during the claim).
    private func claimIfIdle() async -> PublishRun? {
        let settings = context.settings
        while true {
            // Claimed only when it could send at once (a bulk publish that finds only an express slot free waits
            // for a regular one, and nothing more is claimed meanwhile); only this loop claims. With every slot
            // taken, a publish of an instance with no run here still starts, in its floor slot.
            let (halted, runsByInstance) = control.read { control in
                let pairs = control.runs.values.map { ($0.claimed.job.instanceID, 1) }
                return (control.stopping, Dictionary(pairs, uniquingKeysWith: +))
            }
            guard !halted else { return nil }
            let preference: ClaimPreference
            if context.slots.wantsClaim {
                preference = ClaimPreference(runsByInstance: runsByInstance)
            } else if context.slots.wantsFloorClaim {
                preference = ClaimPreference(runsByInstance: runsByInstance, onlyAbsentInstances: true)
            } else {
                return nil
            }
            let claim: PublishLease.Claim?
            do {
                // Of the instance with the fewest runs here; a shard only when a regular slot is free.
                claim = try await PublishLease.claimNext(
                    from: context.store, workerID: settings.workerID, leaseDuration: settings.leaseDuration,
                    preference: preference, shardsToo: !preference.onlyAbsentInstances && context.slots.regularSlotFree)
            } catch let error as StoreUnavailableError {
                // Logged once per interval by StoreHealth; the next poll claims again.
                context.logger.debug("Claiming a publish failed: store unavailable", ["error": error.description])
                claim = nil
            } catch {
                context.logger.error("Claiming a publish failed", ["error": "\(error)"])
                claim = nil
            }
            guard let claim else { return nil }
            let claimed = claim.claimed
            let run = PublishRun(
                claimed: claimed, held: claim.lease,
                lease: LeaseClock(
                    claimSentAt: claim.sentAt, lease: settings.leaseDuration,
                    margin: LeaseClock.margin(for: settings.leaseDuration)))
            let (duplicate, stopping) = control.update { control -> (PublishRun?, Bool) in
                // Our own job, whose lease ran out while it was still running here (a stalled renewal): the
                // claim extended the lease to us again, and a second run would send every device twice. (A shard's
                // claim also raised its epoch: the running one is fenced and stopped below; the shard is claimed
                // again, at its checkpoint, once this claim's lease ends.)
                if let existing = control.runs[RunKey(claimed)] { return (existing, control.stopping) }
                control.runs[RunKey(claimed)] = run
                control.claimed = true
                // Cancelled between the store's claim and now: registered cancelled, before it sends anything.
                if control.pendingCancels.remove(claimed.id) != nil { run.cancel() }
                return (nil, control.stopping)
            }
            if let duplicate {
                context.logger.warning(
                    "Reclaimed a publish this node is still running; its lease had expired",
                    ["publish": claimed.job.publishID, "attempt": String(claimed.attempt)])
                // Every write of the older shard run fails from now on (its epoch is behind): it stops sending now
                // rather than at its next renewal or checkpoint.
                if claimed.shard != nil { duplicate.markLost() }
                continue
            }
            if stopping { run.stop() }
            context.slots.admit(run, lane: Self.lane(of: claimed))
            return run
        }
    }
}
