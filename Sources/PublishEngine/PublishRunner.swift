import BeamsModel
import Clocks
import Foundation
import Logging
import PushStore
import Tracing

/// Runs one claimed publish from start to end: feeds its targets (`TargetFeeder`), renews its lease on its own
/// schedule, writes checkpoints every interval or batch, and finishes it, or, when the engine stops, checkpoints
/// and hands it back to the queue.
///
/// Crash safety comes from the store: a job's cursor only advances over targets with final results, and a job
/// whose lease expired (its node died) is claimed again and resumes there, skipping the targets already answered
/// above the cursor.
struct PublishRunner: Sendable {
    let context: PublishContext
    let run: PublishRun
    let log: Logger
    /// The store calls for this run: its shard's when it delivers one shard of a split publish.
    let queue: RunStore

    init(context: PublishContext, run: PublishRun) {
        self.context = context
        self.run = run
        queue = RunStore(context: context, run: run)
        let base = context.logger.with(["publish": run.claimed.job.publishID])
        log = run.held.shard.map { base.with(["shard": String($0.number)]) } ?? base
    }

    /// Runs the publish, in its trace when tracing is on (`PublishTrace`): the run's span is the task's current
    /// context, so the webhooks it queues carry it and its lanes' results count into its batch spans.
    func execute() async {
        guard
            let trace = PublishTrace.start(
                context.settings.tracer, claimed: run.claimed,
                nodeID: context.settings.workerID)
        else {
            _ = await execute(trace: nil)
            return
        }
        let outcome = await PublishTrace.$current.withValue(trace) {
            await TraceContext.$current.withValue(trace.span.context) { await execute(trace: trace) }
        }
        trace.end(outcome)
    }

    /// - Returns: how the run ended, for its span (a final state, `handed_back`, `rescheduled`, `split`, …).
    private func execute(trace: PublishTrace?) async -> String {
        // However it ends, this run hands nothing more to a sender (a cancel waiting for that must wake).
        defer {
            run.endSubmission()
            context.estimates.remove(run)
        }
        let claimed = run.claimed
        let job = claimed.job
        // Its values are formatted only when the line is written.
        if log.isEnabled(.info) {
            log.info(
                "Publish started",
                [
                    "attempt": String(claimed.attempt), "cursor": String(claimed.cursor),
                    "kind": job.kind.rawValue, "targets": String(job.targets.count),
                ])
        }
        let finisher = PublishFinisher(context: context, run: run, log: log)
        let plan: PublishPlan
        do {
            // Intake on this node may have left the plan it built for these bytes; otherwise they are parsed.
            plan = try context.plans.take(for: job) ?? PublishPlan(decoding: job.payload)
        } catch {
            run.endedBeforeDelivery()
            await finisher.finish(state: .failed, summary: "\(error)")
            return PublishState.failed.rawValue
        }
        run.planned(plan.mode)
        // Held for the whole run: a change to the instance meanwhile leaves this run its senders, which close
        // when the last run holding them ends.
        guard let instance = context.holdInstance(job.instanceID) else {
            run.endedBeforeDelivery()
            await finisher.finish(state: .failed, summary: "instance is no longer configured")
            return PublishState.failed.rawValue
        }
        defer { instance.release() }
        // A split publish whose shards all ended, left unfinished by a node that died: finish it, send nothing.
        if let end = claimed.shardsEnded {
            run.endedBeforeDelivery()
            await finisher.finishSplit(end, plan: plan)
            return "shards_ended"
        }
        let round = LocalTimeRound(delivery: plan.delivery, roundAt: job.notBefore)
        var action = run.started(
            cancelRequested: claimed.cancelRequested,
            windowClosed: plan.expiresAt.map { Date() >= $0 } ?? false, roundBased: round != nil)
        if action == .deliver {
            if claimed.attempt == 1, run.held.shard == nil, let url = job.webhookURL {
                await context.webhooks.publishStarted(
                    url: url, instanceID: job.instanceID, publishID: job.publishID,
                    requestBody: plan.requestBody)
            }
            // A large publish is split into shards that every node claims (`PublishPlan.isShardable`); this run
            // then ends, and the shards are claimed like jobs.
            if plan.isShardable, await split() {
                run.endedBeforeDelivery()
                return "split"
            }
            action = await deliver(plan: plan, instance: instance, round: round)
        }
        // Targets this run got an answer for (a cancelled or expired run abandons what its lanes still held), over
        // every run's.
        let earlierTargets = claimed.counters[.targets] ?? 0
        while true {
            switch action {
            case .deliver:
                return "delivered"  // Not reached: `deliver` reports the end of delivery.
            case .checkpoint:
                action = run.checkpointed(await checkpoint())
            case .checkpointAfterPause:
                await run.pauseBeforeLastCheckpoint(for: context.settings.storeRetryInterval)
                action = run.checkpointed(await checkpoint())
            case .endQuietly:
                return "lease_lost"
            case .handBack(.fenced(let releaseLease)):
                if releaseLease { _ = try? await queue.renewLease(.zero) }
                log.warning(
                    "Publish stopped: its lease could not be renewed in time; handed back",
                    ["cursor": String(run.watermark)])
                return "fenced"
            case .handBack(.paused):
                // Make the job claimable at once, so the restarted server resumes it immediately. (During an
                // outage this write fails too; the lease then runs out.)
                _ = try? await queue.renewLease(.zero)
                log.notice("Publish paused for shutdown", ["cursor": String(run.watermark)])
                return "paused"
            case .reschedule:
                guard let round, let next = await nextRound(round, plan: plan) else {
                    action = run.nextRound(known: false)
                    continue
                }
                await reschedule(at: next)
                return "rescheduled"
            case .finish(let state, let summary):
                let total = earlierTargets + run.submittedTotal - Int64(run.abandonedCount)
                trace?.endBatches()
                // Read once for the notes and handed to the finisher, whose log line counts from them too.
                let counters = summary == .notes ? await storedCounters() : nil
                await finisher.finish(
                    state: state, summary: text(of: summary, plan: plan, counters: counters), total: total,
                    plan: plan, counters: counters)
                return state.rawValue
            }
        }
    }

    /// Feeds the targets (or channels) to the senders while the checkpoint, lease and fence loops run.
    /// - Returns: the step after delivery (the last checkpoint).
    private func deliver(plan: PublishPlan, instance: InstanceRuntime, round: LocalTimeRound?) async
        -> PublishRunStateMachine.Action
    {
        let answered = await answeredTargets()
        let progress = await progress(plan: plan, round: round)
        return await withDiscardingTaskGroup { group -> PublishRunStateMachine.Action in
            group.addTask { await keepCheckpointing(progress) }
            group.addTask { await keepLease() }
            group.addTask { await keepFence() }
            let complete: Bool
            // Nothing goes to a sender before the node's slots give this run one (`PublishSlots`).
            if await !run.waitForSlot() {
                complete = false
            } else {
                // The estimate's clock starts with sending; before its first observation it rests on the pacing.
                estimated(progress.observe(run))
                switch plan.mode {
                case .broadcast(let broadcast):
                    complete = await BroadcastFeeder(context: context, run: run, instance: instance, log: log)
                        .deliver(broadcast, skipping: answered)
                case .devices, .liveActivity:
                    // Counted when the first target was read (none read: never), before any is sent.
                    var countFirst: (@Sendable () async -> Void)?
                    if RunProgress.countsAtFirstTarget(plan) {
                        countFirst = { [self] in progress.count(await targetCount(plan: plan)) }
                    }
                    complete = await TargetFeeder(context: context, run: run, instance: instance, log: log)
                        .deliver(plan: plan, skipping: answered, round: round, beforeFirstTarget: countFirst)
                }
            }
            // Nothing more is sent by this run: its estimate goes (to 0 in the store with the last checkpoint).
            run.clearEstimate()
            context.estimates.remove(run)
            // Wakes the three loops; the group waits for them before the last checkpoint.
            return run.fed(complete: complete)
        }
    }

    /// The publish's stored counters, every run's, all checkpointed by now; nil when they could not be read.
    private func storedCounters() async -> PublishCounters? {
        // Only a run's checkpoints write a job's counters (a claim reads none for a first attempt either): the
        // first run of a whole job that never tried to write one knows there are none, and reads nothing (19,000
        // instructions of SQL and a hand-off to a reader thread for every publish nobody follows;
        // docs/BENCHMARKS.md "Intake's store calls per job"). A shard's run reads the whole publish's.
        let claimed = run.claimed
        if claimed.attempt == 1, claimed.counters.isEmpty, run.held.shard == nil, !run.triedCheckpoint { return [:] }
        let job = claimed.job
        return try? await context.store.publishCounters(instanceID: job.instanceID, publishID: job.publishID)
    }

    /// The text of a finished publish's summary; `counters` are the stored ones (`storedCounters()`) for `.notes`.
    private func text(of summary: PublishRunStateMachine.Summary, plan: PublishPlan, counters: PublishCounters?)
        -> String?
    {
        let at = plan.expiresAt?.iso8601 ?? "?"
        switch summary {
        case .cancelled:
            return "cancelled"
        case .windowClosedBeforeStart:
            return "delivery window closed at \(at) before it could start"
        case .windowClosedWhileSending:
            return "delivery window closed at \(at); the rest was not sent"
        case .windowClosedBeforeRetries:
            return "delivery window closed at \(at); retries that would have gone out after it were not sent"
        case .notes:
            // From the stored counters: a platform without credentials is named only when the publish had devices
            // on it.
            return PublishSummary.notes(counters: counters ?? [:])
        }
    }

    /// The moment of a local-time publish's next round. A round resumed after a crash saw only the targets after
    /// its cursor; the ones before it are read again (not sent) so that no zone's round is missed.
    private func nextRound(_ round: LocalTimeRound, plan: PublishPlan) async -> Date? {
        let resumedAt = run.claimed.cursor
        var cursor: Int64 = 0
        while cursor < resumedAt {
            let page: TargetPage
            do {
                page = try await context.store.targets(
                    for: run.claimed.job, after: cursor, limit: context.settings.pageSize)
            } catch {
                log.error(
                    "Reading targets for the next local-time round failed; zones before the cursor may wait for a later round",
                    ["error": "\(error)"])
                break
            }
            for target in page.targets where target.ref <= resumedAt && plan.carries(target.platform) {
                _ = round.isDue(target)
            }
            if page.isLast || page.cursor <= cursor { break }
            cursor = page.cursor
        }
        return round.nextRound
    }

    /// Hands a finished local-time round back to the queue, due at the next round; the engine's timer wakes for it.
    private func reschedule(at next: Date) async {
        do {
            try await context.store.rescheduleJob(run.claimed.id, workerID: context.settings.workerID, notBefore: next)
            log.info("Local-time round done", ["nextRound": next.iso8601, "sent": String(run.submittedTotal)])
        } catch {
            // The lease runs out (or is handed back below) and the round runs again: its targets are all answered
            // by then, so it sends nothing and reschedules.
            log.error("Rescheduling the next local-time round failed", ["error": "\(error)"])
            _ = try? await context.store.renewLease(
                run.claimed.id, workerID: context.settings.workerID,
                leaseDuration: .zero, now: Date())
        }
    }

    /// Splits the publish into shards when it is large enough and the store can (`storage.postgresql.shardSize`).
    /// - Returns: whether it was split (this run then ends; the job waits for its shards).
    private func split() async -> Bool {
        do {
            let shards = try await queue.split(shardSize: context.settings.shardSize)
            guard shards > 0 else { return false }
            log.info("Publish split into shards", ["shards": String(shards)])
            return true
        } catch {
            // Delivered whole then, by this node: slower, never wrong.
            log.error("Splitting the publish into shards failed; delivering it whole", ["error": "\(error)"])
            return false
        }
    }

    /// What this run's completion estimate rests on: its targets in all (read from the store once, now or at its
    /// first target: `RunProgress.countsAtFirstTarget`), those answered before, its pacing and rounds.
    private func progress(plan: PublishPlan, round: LocalTimeRound?) async -> RunProgress {
        let total = RunProgress.countsAtFirstTarget(plan) ? nil : await targetCount(plan: plan)
        return RunProgress(
            total: total, earlier: run.claimed.counters[.targets] ?? 0, plan: plan,
            round: round)
    }

    /// The run's targets in all (`RunStore.targetCount`); nil when unknown or not read (the run then goes without
    /// an estimate).
    private func targetCount(plan: PublishPlan) async -> Int64? {
        do {
            return try await queue.targetCount(plan: plan)
        } catch {
            log.warning("Counting the publish's targets failed; no completion estimate", ["error": "\(error)"])
            return nil
        }
    }

    /// A new estimate (nil: none) of this run, for `/metrics`.
    private func estimated(_ estimate: CompletionEstimator.Estimate?) {
        context.estimates.update(run, instance: run.claimed.job.instanceID, seconds: estimate?.secondsRemaining)
    }

    /// Targets a previous run got answers for above its last cursor: they are not sent again.
    private func answeredTargets() async -> Set<Int64> {
        guard run.claimed.attempt > 1 else { return [] }
        do {
            return try await queue.answeredTargets()
        } catch {
            log.error("Reading answered targets failed; they may be sent again", ["error": "\(error)"])
            return []
        }
    }

    /// A checkpoint every interval, or sooner once a batch of results waits: what a crash can send twice is what
    /// was in flight plus what was answered but not yet checkpointed. Ends when delivery ends (the runner writes
    /// the last one) or the lease is lost (nothing more may be written).
    private func keepCheckpointing(_ progress: RunProgress) async {
        let settings = context.settings
        var deadline = MonotonicInstant.now + settings.checkpointInterval
        while true {
            await run.waitForCheckpoint(batch: settings.checkpointBatch, deadline: deadline)
            if run.isDelivered || run.isLost { return }
            deadline = .now + settings.checkpointInterval
            if run.estimateStarted { estimated(progress.observe(run)) }
            if await checkpoint() != .done {
                // The batch is still waiting: try again at the next interval, not at once.
                if await run.waitForEnd(deadline: deadline) { return }
                deadline = .now
            }
        }
    }

    /// Renews the lease every third of its duration, on its own clock: tying renewals to checkpoints let slow
    /// checkpoints (a loaded machine) stretch the period past the lease, and the job was claimed again while it ran.
    private func keepLease() async {
        let settings = context.settings
        var next = MonotonicInstant.now + settings.leaseDuration / 3
        while await !run.waitForEnd(deadline: next) {
            next = .now + settings.leaseDuration / 3
            do {
                // Read before sending: a renewal that answers late must not extend the lease past what the store
                // granted, which counts from when the store ran it.
                let sentAt = MonotonicClock.now()
                let cancelRequested = try await queue.renewLease(settings.leaseDuration)
                run.leaseRenewed(sentAt: sentAt)
                // Cancelled through another node (a cancel through this one has stopped the run already): the run
                // stops sending and ends `cancelled`, as a local cancel does.
                if cancelRequested && !run.isCancelled {
                    log.notice("Publish cancelled elsewhere; stopping this run")
                    run.cancel()
                }
            } catch PushStoreError.leaseLost {
                log.error("Publish lease lost to another worker; stopping this run")
                run.markLost()
                context.metrics.increment(.leasesLost)
            } catch let error as StoreUnavailableError {
                log.debug("Renewing the publish lease failed: store unavailable", ["error": error.description])
            } catch {
                log.error("Renewing the publish lease failed", ["error": "\(error)"])
            }
        }
    }

    /// The self-fence: sleeps until the lease's deadline (the last successful renewal's send time plus the lease,
    /// minus the margin; see `LeaseClock`), and when no newer renewal succeeded by then, stops the run's sending.
    /// A node cut off from the store cannot learn that another node claimed the job after the lease ran out; this
    /// is what keeps it from sending the devices the new owner sends too. Lanes also check the deadline before
    /// each send (`PublishRun.mustStop`), so a timer that fires late on a loaded machine lets nothing through.
    private func keepFence() async {
        while let remaining = run.fenceIfLeaseExpired() {
            await run.waitForFence(deadline: .now + remaining)
            if run.isDelivered || run.isLost { return }
        }
        if run.isFenced && !run.isDelivered {
            log.error(
                "Publish lease not renewed in time; stopping this run's sending",
                ["cursor": String(run.watermark), "outstanding": String(run.outstanding)])
        }
    }

    /// Writes the run's waiting results and its watermark.
    private func checkpoint() async -> PublishRunStateMachine.CheckpointOutcome {
        // The results counted since the last batch reach `/metrics` with each checkpoint, written or not (they
        // count answers, not writes).
        run.takeTally().apply(to: context.metrics)
        guard !run.isLost else { return .done }
        var batch = run.drain()
        guard !batch.isEmpty || batch.cursor > run.claimed.cursor else { return .done }
        run.writingCheckpoint()
        do {
            let started = MonotonicClock.now()
            if run.targetsTokenRows {
                // The refs are token rows: dead tokens are deleted (idempotent, so a failed checkpoint after it
                // repeats nothing harmful), and no device's health changes.
                let deaths = batch.results.compactMap(\.liveActivityTokenDeath)
                if !deaths.isEmpty { _ = try await context.store.deleteDeadLiveActivityTokens(deaths) }
                batch.results = []
            }
            let totals = run.totals(with: batch)
            try await queue.checkpoint(batch, totals: totals)
            run.written(totals: totals)
            // A checkpoint closes the platforms' batch spans: one span per platform per batch of results.
            PublishTrace.current?.endBatches()
            context.metrics.increment(.checkpoints)
            if log.isEnabled(.debug) {
                log.debug(
                    "Checkpoint written",
                    [
                        "cursor": String(batch.cursor), "results": String(batch.results.count),
                        "aboveCursor": String(batch.answered.count),
                        "duration": "\(MonotonicClock.elapsed(since: started))",
                    ])
            }
        } catch PushStoreError.leaseLost {
            // Retrying cannot succeed, and sending on would duplicate the new owner's work.
            log.error("Publish lease lost to another worker; stopping this run")
            run.written()
            run.markLost()
            context.metrics.increment(.leasesLost)
        } catch let error as StoreUnavailableError {
            // StoreHealth logs the outage once per interval; a line per checkpoint would flood the log.
            log.debug("Checkpoint failed: store unavailable; will retry", ["error": error.description])
            run.restore(batch)
            return .storeUnavailable
        } catch {
            log.error("Checkpoint failed; will retry", ["error": "\(error)"])
            run.restore(batch)
            return .failed
        }
        return .done
    }
}
