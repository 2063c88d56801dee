import APNsClient
import Clocks
import ConfigModel
import Foundation
import Lifecycle
import Locking
import Logging
import Observability
import PushStore
import Tracing

/// Runs queued publishes: claims jobs from the store with a lease (`JobScheduler`), streams their targets page by
/// page into each platform's sender (APNs, FCM, Web Push), whose in-flight windows are the backpressure
/// (`TargetFeeder`), records results in batched checkpoints and finishes them (`PublishRunner`,
/// `PublishFinisher`). Several publishes run side by side, so a million-device publish never holds a one-user publish back: the sender's window is shared fairly because
/// each publish has at most one request waiting for it.
///
/// A `Service`: `run()` works until its task is cancelled, then drains for `Settings.gracePeriod`: it stops
/// claiming and sending, waits half the grace period for the answers in flight, shuts the sender down (unanswered
/// notifications stay below their publish's checkpoint and are sent by the next run), lets every publish write
/// its last checkpoint, and returns.
package final class PublishEngine: Service {
    /// Engine tuning (see `ServerConfig.Engine`).
    package struct Settings: Sendable {
        package var concurrentPublishes = 8
        /// Slots on top of `concurrentPublishes` that only small publishes (a users publish to a few users) use:
        /// one starts even while every regular slot carries a huge publish.
        package var expressPublishSlots = 2
        /// Most claimed publishes parked without a slot at once (a paced publish between its tokens); beyond it a
        /// paced publish keeps its slot while it waits. Each parked run still renews its lease.
        package var maxParkedPublishes = 256
        /// The shortest wait for a paced publish's next token that gives its slot up.
        package var parkAfter: Duration = .milliseconds(20)
        package var pageSize = 1000
        package var leaseDuration: Duration = .seconds(30)
        /// How often results are written to the store while a publish runs…
        package var checkpointInterval: Duration = .milliseconds(200)
        /// …or sooner, once this many results wait.
        package var checkpointBatch = 500
        /// Sending pauses while this many results wait for a checkpoint (the store cannot write, say): memory and
        /// what a crash would send again stay bounded.
        package var maxUncheckpointedResults = 10_000
        /// How often the queue is polled when nothing wakes the engine (other nodes' jobs, expired leases).
        package var pollInterval: Duration = .seconds(1)
        /// While the store cannot write (a full disk), how long a publish waits before writing its last results
        /// or its end again.
        package var storeRetryInterval: Duration = .seconds(1)
        /// How long draining may take once `run()` is cancelled: half waits for answers, half for the sender's
        /// shutdown.
        package var gracePeriod: Duration = .seconds(20)
        /// This node's name in leases.
        package var workerID = "node-\(ProcessInfo.processInfo.hostName)-\(getpid())"
        /// Targets per shard of a large interests publish, on a backend that splits publishes so that every node
        /// delivers part of it (`storage.postgresql.shardSize`); 0 delivers every publish whole, on one node.
        package var shardSize = 0
        /// How often this node records its heartbeat in a shared database (`nodes` table, `push_nodes_live`).
        package var heartbeatInterval: Duration = .seconds(10)
        /// A node whose last heartbeat is older than this no longer counts as live (three missed heartbeats).
        package var nodeLiveWindow: Duration = .seconds(30)
        /// The program's version, recorded with the heartbeat.
        package var version = ""
        /// Hears the number of live nodes after each heartbeat (the API shares its per-instance limits out).
        package var liveNodesChanged: @Sendable (Int) -> Void = { _ in }
        /// Starts the runs' and the deliveries' spans (`Tracer.disabled` unless `tracing` is on).
        package var tracer = Tracer.disabled
        package init() {}
    }

    struct Phase {
        var started = false
        /// Set by cancellation or `shutdown`: the grace period to drain with.
        var stop: Duration?
        var drainStarted = false
        /// The sender was shut down.
        var drained = false
        /// Every run ended.
        var finished = false
    }

    package let name = "engine"
    let context: PublishContext
    private let scheduler: JobScheduler
    /// Where the engine is in its lifetime (tests wait on it).
    let phase = WaitableState(Phase())

    /// APNs reachability, for `/ready`.
    package var apnsHealth: APNsHealth { context.apnsHealth }
    /// Notifications per minute per instance, for the console's chart.
    package var activity: DeliveryActivity { context.activity }
    package var budgets: DeliveryBudgets { context.budgets }

    /// Makes the per-instance budgets, slot weights and the console's chart follow the served set (the app calls it
    /// from `InstanceDirectory.observe`).
    package func follow(_ configs: [InstanceConfig]) {
        context.budgets.follow(configs)
        context.slots.setWeights(
            Dictionary(
                configs.map { ($0.id.lowercased(), $0.publishWeight) },
                uniquingKeysWith: { first, _ in first }))
        context.activity.follow(instanceIDs: configs.map(\.id))
    }

    /// - Parameters:
    ///   - apns: the APNs sender; each instance brings its own FCM and Web Push senders (`InstanceRuntime`). Every
    ///     sender has its own in-flight window.
    package init(
        store: any PublishEngineStore, apns: any APNsSending, instances: [InstanceRuntime], settings: Settings,
        metrics: Metrics, logger: Logger, webhooks: any PublishWebhooks, broadcaster: (any BroadcastSending)? = nil,
        broadcastRetryPolicy: APNsRetryPolicy = APNsRetryPolicy(), directory: InstanceDirectory? = nil
    ) {
        context = PublishContext(
            store: store, sender: apns, instances: instances, settings: settings,
            metrics: metrics, webhooks: webhooks, logger: logger, broadcaster: broadcaster,
            broadcastRetryPolicy: broadcastRetryPolicy, directory: directory, plans: PlanHandoff())
        scheduler = JobScheduler(context: context)
        Self.declareMetrics(metrics)
    }

    static func declareMetrics(_ metrics: Metrics) {
        metrics.declare(.publishJobs)
        metrics.declare(.publishJobsRunning)
        metrics.declare(.publishQueueDepth)
        metrics.declare(.notifications)
        metrics.declare(.broadcasts)
        metrics.declare(.checkpoints)
        metrics.declare(.leasesLost)
        metrics.declare(.publishShards)
        metrics.declare(.publishEstimateRemainingSeconds)
        PublishSlots.declareMetrics(metrics)
        metrics.declare(.nodesLive)
    }

    /// Where intake on this node leaves the plans it built, for the runs that claim their jobs here.
    package var plans: PlanHandoff { context.plans }

    /// Tells the engine a job may be waiting.
    package func wake() { scheduler.wake() }

    /// Longest a cancel waits for a run to stop handing targets to a sender: a pump waiting for room in a full
    /// sender window hands over its one target once an answer frees a slot (bounded by the request timeout).
    static let cancelSubmissionWait: Duration = .seconds(30)
    /// Longest a cancel then waits for the answers in flight, so that its answer shows the final counts.
    static let cancelAnswerWait: Duration = .seconds(10)

    /// Whether a run of `job` on this node has been cancelled (`cancel` marks it before its first wait): what a
    /// caller that must act only once the run stopped handing out targets can wait for.
    package func isCancelled(_ job: PublishJobID) -> Bool {
        scheduler.runs.contains { $0.claimed.id == job && $0.isCancelled }
    }

    /// Stops the publish's run on this node after `cancelPublish` marked it: the run stops handing targets to the
    /// senders, ends its waiting retries (`PublishRun.cancel`), waits for the answers in flight and ends `cancelled`. Returns once nothing more is handed to a
    /// sender (and, within `cancelAnswerWait`, once the run ended). - Returns: whether a run was stopped here
    /// (otherwise the node holding it, or the next claimant, ends it).
    package func cancel(_ job: PublishJobID) async -> Bool {
        // Several runs when shards of a split publish run here.
        let runs = scheduler.cancel(job)
        guard !runs.isEmpty else { return false }
        let submissionDeadline = MonotonicInstant.now + Self.cancelSubmissionWait
        for run in runs where await !run.waitForSubmissionEnd(deadline: submissionDeadline) {
            context.logger.warning(
                "A cancelled publish still waits for a sender slot",
                ["publish": run.claimed.job.publishID])
        }
        let answerDeadline = MonotonicInstant.now + Self.cancelAnswerWait
        for run in runs { _ = await run.waitForRunEnd(deadline: answerDeadline) }
        return true
    }

    /// Claims and runs jobs until the task is cancelled (or `shutdown` is called), drains, and returns when every
    /// running publish has written its last checkpoint.
    package func run() async {
        let first = phase.update { phase -> Bool in
            defer { phase.started = true }
            return !phase.started
        }
        guard first else { return }
        // The work has its own task: cancelling the caller must not cancel the publishes, which still have to
        // checkpoint and hand back their unanswered notifications while draining.
        let work = Task { [self] in
            await withDiscardingTaskGroup { group in
                group.addTask { await self.scheduler.run() }
                await phase.wait { $0.stop != nil }
                await drain(gracePeriod: phase.read { $0.stop } ?? context.settings.gracePeriod)
            }
            phase.update { $0.finished = true }
        }
        await withTaskCancellationHandler {
            await work.value
        } onCancel: {
            requestStop(gracePeriod: context.settings.gracePeriod)
        }
    }

    /// Stops the engine as cancelling `run()` does, with `gracePeriod` to drain; returns when every running
    /// publish has written its last checkpoint (at once after draining when `run()` never started).
    package func shutdown(gracePeriod: Duration) async {
        let grace = max(.zero, gracePeriod)
        let started = phase.read { $0.started }
        requestStop(gracePeriod: grace)
        if started {
            await phase.wait { $0.finished }
        } else {
            await drain(gracePeriod: grace)
        }
    }

    private func requestStop(gracePeriod: Duration) {
        phase.update { phase in
            if phase.stop == nil { phase.stop = gracePeriod }
        }
        scheduler.stop()
    }

    /// Waits half the grace period for the answers in flight, then shuts the sender down for the other half: what
    /// is still unanswered comes back as abandoned and stays below its publish's checkpoint.
    private func drain(gracePeriod: Duration) async {
        let first = phase.update { phase -> Bool in
            defer { phase.drainStarted = true }
            return !phase.drainStarted
        }
        guard first else {
            await phase.wait { $0.drained }
            return
        }
        let half = gracePeriod / 2
        await waitAtMost(until: .now + half) { await self.scheduler.waitForAnswers() }
        // Every platform's sender drains at once: the grace period is the engine's, not each sender's.
        // Retired runtimes still held by a run are closed here too.
        let instances = context.instancesToClose
        async let apns = context.sender.shutdown(gracePeriod: half).count
        let others = await withTaskGroup(of: Int.self, returning: Int.self) { group in
            for instance in instances { group.addTask { await instance.closeAtShutdown(gracePeriod: half) } }
            return await group.reduce(0, +)
        }
        let unanswered = await apns + others
        // A broadcast still unanswered ends `.shutdown` and stays below its publish's checkpoint.
        await context.broadcaster?.shutdown()
        if unanswered > 0 {
            context.logger.notice("Unanswered notifications returned to the queue", ["count": String(unanswered)])
        }
        phase.update { $0.drained = true }
    }
}
