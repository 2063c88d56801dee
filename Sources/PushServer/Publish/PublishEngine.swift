import APNsClient
import Clocks
import Foundation
import Logging
import PushStore
import Locking

/// Runs queued publishes: claims jobs from the store with a lease, streams their targets page by page into the
/// APNs client (whose in-flight window is the backpressure), records results in batched checkpoints, and finishes
/// them. Several publishes run side by side, so a million-device publish never holds a one-user publish back: the
/// client's window is shared fairly because each publish has at most one request waiting for it.
///
/// Crash safety comes from the store: a job's cursor only advances over targets with final results, and a job
/// whose lease expired (its node died) is claimed again and resumes there.
public final class PublishEngine: Sendable {
    /// Engine tuning (see `ServerConfig.Engine`).
    public struct Settings: Sendable {
        public var concurrentPublishes = 8
        public var pageSize = 1000
        public var leaseDuration: Duration = .seconds(30)
        /// How often results are written to the store while a publish runs…
        public var checkpointInterval: Duration = .milliseconds(200)
        /// …or sooner, once this many results wait.
        public var checkpointBatch = 500
        /// Sending pauses while this many results wait for a checkpoint (the store cannot write, say): memory and
        /// what a crash would send again stay bounded.
        public var maxUncheckpointedResults = 10_000
        /// How often the queue is polled when nothing wakes the engine (other nodes' jobs, expired leases).
        public var pollInterval: Duration = .seconds(1)
        /// While the store cannot write (a full disk), how long a publish waits before writing its last results
        /// or its end again.
        public var storeRetryInterval: Duration = .seconds(1)
        /// This node's name in leases.
        public var workerID = "node-\(ProcessInfo.processInfo.hostName)-\(getpid())"
        public init() {}
    }

    private struct Control {
        var running = 0
        var stopping = false
        var runs: [PublishJobID: PublishRun] = [:]
    }

    private let store: any PushStorage
    private let apns: APNsClient
    private let instances: [String: InstanceRuntime]
    private let settings: Settings
    private let metrics: Metrics
    private let logger: Logger
    private let webhooks: WebhookOutbox
    /// APNs reachability, for `/ready`.
    let apnsHealth = APNsHealth()
    /// Notifications per minute per instance, for the console's chart.
    let activity: DeliveryActivity
    private let control = Locked(Control())
    private let wakeStream: AsyncStream<Void>
    private let wakeContinuation: AsyncStream<Void>.Continuation

    init(store: any PushStorage, apns: APNsClient, instances: [InstanceRuntime], settings: Settings,
         metrics: Metrics, logger: Logger, webhooks: WebhookOutbox) {
        self.store = store
        self.apns = apns
        var byID: [String: InstanceRuntime] = [:]
        for instance in instances { byID[instance.config.id.lowercased()] = instance }
        self.instances = byID
        activity = DeliveryActivity(instanceIDs: instances.map(\.config.id))
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.webhooks = webhooks
        (wakeStream, wakeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        Self.declareMetrics(metrics)
    }

    static func declareMetrics(_ metrics: Metrics) {
        metrics.declare("push_publish_jobs_total", counter: "Publish jobs that ended, by final state.")
        metrics.declare("push_publish_jobs_running", gauge: "Publish jobs this node is running.")
        metrics.declare("push_publish_queue_depth", gauge: "Publishes queued or running (all nodes).")
        metrics.declare("push_notifications_total", counter: "APNs outcomes by status and reason.")
        metrics.declare("push_checkpoints_total", counter: "Checkpoints written.")
    }

    /// Tells the engine a job may be waiting.
    public func wake() { wakeContinuation.yield() }

    private var isStopping: Bool { control.withLock { $0.stopping } }

    /// Claims and runs jobs until `shutdown` is called; returns when every running publish has checkpointed.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { [self] in
                // A periodic wake-up finds jobs enqueued by other nodes and jobs whose lease expired.
                while !isStopping {
                    try? await Task.sleep(for: settings.pollInterval)
                    wake()
                    if let depth = try? await store.queueDepth() { metrics.set("push_publish_queue_depth", to: Double(depth)) }
                }
            }
            for await _ in wakeStream {
                if isStopping { break }
                while let claimed = await claimIfIdle() {
                    group.addTask { [self] in
                        await process(claimed)
                        let running = control.withLock { control in
                            control.running -= 1
                            control.runs[claimed.id] = nil
                            return control.running
                        }
                        metrics.set("push_publish_jobs_running", to: Double(running))
                        wake()
                    }
                }
            }
        }
    }

    /// Claims a job when a slot is free.
    private func claimIfIdle() async -> ClaimedJob? {
        let free = control.withLock { control -> Bool in
            guard !control.stopping, control.running < settings.concurrentPublishes else { return false }
            control.running += 1
            return true
        }
        guard free else { return nil }
        do {
            if let claimed = try await store.claimJob(workerID: settings.workerID, leaseDuration: settings.leaseDuration,
                                                      now: Date()) {
                let (running, duplicate) = control.withLock { control -> (Int, Bool) in
                    // Our own job, whose lease ran out while it was still running here (a stalled renewal): the
                    // claim extended the lease to us again, and a second run would send every device twice.
                    if control.runs[claimed.id] != nil {
                        control.running -= 1
                        return (control.running, true)
                    }
                    control.runs[claimed.id] = PublishRun(claimed: claimed)
                    return (control.running, false)
                }
                if duplicate {
                    logger.warning("Reclaimed a publish this node is still running; its lease had expired",
                                   ["publish": claimed.job.publishID, "attempt": String(claimed.attempt)])
                    return await claimIfIdle()
                }
                metrics.set("push_publish_jobs_running", to: Double(running))
                return claimed
            }
        } catch let error as StoreUnavailableError {
            // Logged once per interval by StoreHealth; the next poll claims again.
            logger.debug("Claiming a publish failed: store unavailable", ["error": error.description])
        } catch {
            logger.error("Claiming a publish failed", ["error": "\(error)"])
        }
        control.withLock { $0.running -= 1 }
        return nil
    }

    /// Stops claiming, lets in-flight notifications finish for half the grace period, then shuts the APNs client
    /// down (unanswered requests stay below their publish's checkpoint and are sent again after a restart).
    public func shutdown(gracePeriod: Double) async {
        control.withLock { $0.stopping = true }
        wakeContinuation.finish()
        let deadline = Date().addingTimeInterval(gracePeriod / 2)
        while Date() < deadline {
            let outstanding = control.withLock { $0.runs.values.reduce(0) { $0 + $1.outstanding } }
            if outstanding == 0 { break }
            try? await Task.sleep(for: .milliseconds(10))
        }
        let unanswered = await apns.shutdown(gracePeriod: gracePeriod / 2)
        if !unanswered.isEmpty {
            logger.notice("Unanswered notifications returned to the queue", ["count": String(unanswered.count)])
        }
    }

    // MARK: One publish

    private func process(_ claimed: ClaimedJob) async {
        guard let run = control.withLock({ $0.runs[claimed.id] }) else { return }
        let job = claimed.job
        let log = logger.with(["publish": job.publishID])
        log.info("Publish started", ["attempt": String(claimed.attempt), "cursor": String(claimed.cursor),
                                     "kind": job.kind.rawValue, "targets": String(job.targets.count)])
        let plan: PublishPlan
        do {
            plan = try PublishPlan(decoding: job.payload)
        } catch {
            await finish(claimed, state: .failed, summary: "\(error)", log: log)
            return
        }
        guard let instance = instances[job.instanceID.lowercased()] else {
            await finish(claimed, state: .failed, summary: "instance is no longer configured", log: log)
            return
        }
        if claimed.attempt == 1, let url = job.webhookURL {
            await webhooks.publishStarted(url: url, publishID: job.publishID, requestBody: plan.requestBody)
        }

        // Targets a previous run got answers for above its last cursor are not sent again.
        var answered = Set<Int64>()
        if claimed.attempt > 1 {
            do {
                answered = try await store.answeredTargets(claimed.id)
            } catch {
                log.error("Reading answered targets failed; they may be sent again", ["error": "\(error)"])
            }
        }
        var complete = false
        await withDiscardingTaskGroup { group in
            group.addTask { [self] in
                // A checkpoint every interval, or sooner once a batch of results waits: what a crash can send twice
                // is what was in flight plus what was answered but not yet checkpointed.
                var last = MonotonicClock.now()
                while !run.isDelivered {
                    try? await Task.sleep(for: .milliseconds(20))
                    guard run.pendingResults >= settings.checkpointBatch
                        || MonotonicClock.elapsed(since: last) >= settings.checkpointInterval
                    else { continue }
                    last = MonotonicClock.now()
                    await checkpoint(run, log: log)
                }
            }
            // The lease is renewed on its own wall-clock schedule: counting checkpoint sleeps let slow checkpoints
            // (a loaded machine) stretch the renewal period past the lease, and the job was claimed again while
            // it ran.
            group.addTask { [self] in
                var renewed = MonotonicClock.now()
                while !run.isDelivered {
                    try? await Task.sleep(for: .milliseconds(50))
                    guard MonotonicClock.elapsed(since: renewed) >= settings.leaseDuration / 3 else { continue }
                    renewed = MonotonicClock.now()
                    do {
                        try await store.renewLease(claimed.id, workerID: settings.workerID,
                                                   leaseDuration: settings.leaseDuration, now: Date())
                    } catch PushStoreError.leaseLost {
                        log.error("Publish lease lost to another worker; stopping this run")
                        run.markLost()
                    } catch let error as StoreUnavailableError {
                        log.debug("Renewing the publish lease failed: store unavailable", ["error": error.description])
                    } catch {
                        log.error("Renewing the publish lease failed", ["error": "\(error)"])
                    }
                }
            }
            complete = await deliver(run, plan: plan, instance: instance, skipping: answered, log: log)
            run.markDelivered()
            // Wake the checkpoint loop from its sleep: a one-device publish must not wait out the interval.
            group.cancelAll()
        }
        // The last results must be stored before the publish ends: while the store cannot write (a full disk)
        // they are kept and written again, so nothing answered is sent twice or missing from the counts.
        while !run.isLost, await checkpoint(run, log: log) == .storeUnavailable, !isStopping {
            try? await Task.sleep(for: settings.storeRetryInterval)
        }
        if run.isLost {
            // Another worker owns the job now and resumes it from the last checkpoint this run wrote.
            return
        }

        if complete {
            var notes: [String] = []
            if instance.credentials == nil { notes.append("no APNs credentials configured: nothing was sent") }
            if plan.apnsPayload == nil { notes.append("the publish has no apns part") }
            if !plan.unsupportedPlatforms.isEmpty {
                notes.append("unsupported platforms: \(plan.unsupportedPlatforms.joined(separator: ", "))")
            }
            await finish(claimed, state: .finished, summary: notes.isEmpty ? nil : notes.joined(separator: "; "),
                         total: (claimed.counters[PublishCounter.targets] ?? 0) + run.submittedTotal, run: run, plan: plan,
                         log: log)
        } else {
            // Paused by shutdown: make the job claimable at once, so the restarted server resumes it immediately.
            try? await store.renewLease(claimed.id, workerID: settings.workerID, leaseDuration: .zero, now: Date())
            log.notice("Publish paused for shutdown", ["cursor": String(run.watermark)])
        }
    }

    /// Streams targets into the APNs client. - Returns: true when every target has a final result.
    private func deliver(
        _ run: PublishRun, plan: PublishPlan, instance: InstanceRuntime, skipping answered: Set<Int64>, log: Logger
    ) async -> Bool {
        let job = run.claimed.job
        guard let payload = plan.apnsPayload else { return true }
        let template = RequestTemplate(plan: plan, payload: payload, topic: instance.config.apns?.topic ?? "")
        var reachedEnd = false
        // The next page is read while the current one is submitted: a page read takes tens of milliseconds, long
        // enough for the APNs window to drain if reads and submissions took turns.
        var nextPage = prefetch(job, after: run.claimed.cursor, log: log)
        while !isStopping && !run.isLost {
            guard let page = await nextPage.value else { break }
            if !page.isLast { nextPage = prefetch(job, after: page.cursor, log: log) }
            for target in page.targets where target.platform == .apns && !answered.contains(target.ref) {
                while run.pendingResults >= settings.maxUncheckpointedResults && !isStopping && !run.isLost {
                    try? await Task.sleep(for: .milliseconds(20))
                }
                if isStopping || run.isLost { break }
                run.submitted(target)
                guard let credentials = instance.credentials else {
                    run.completed(target, counters: [PublishCounter.failed("NoAPNsCredentials"): 1],
                                  device: DeviceResult(device: target.ref, status: 0, reason: "NoAPNsCredentials", at: Date()))
                    continue
                }
                await submit(target, environment: target.environment, isRetry: false, template: template,
                             credentials: credentials, instance: instance, run: run)
            }
            if isStopping || run.isLost { break }
            run.scanned(upTo: page.cursor)
            if page.isLast {
                reachedEnd = true
                break
            }
        }
        nextPage.cancel()
        // Wait for the answers still in flight (on shutdown, the client abandons them and this ends too).
        while run.outstanding > 0 { try? await Task.sleep(for: .milliseconds(5)) }
        return reachedEnd && run.abandonedCount == 0
    }

    /// Reads the page after `cursor` in the background, retrying store errors until it succeeds or the engine stops
    /// (then it yields nil). Unstructured on purpose: it must overlap the caller's submissions, and
    /// the caller always awaits or cancels it.
    private func prefetch(_ job: PublishJob, after cursor: Int64, log: Logger) -> Task<TargetPage?, Never> {
        Task { [store, settings] in
            while !Task.isCancelled && !isStopping {
                let started = MonotonicClock.now()
                do {
                    let page = try await store.targets(for: job, after: cursor, limit: settings.pageSize)
                    if log.isEnabled(.trace) {
                        log.trace("Targets page read", ["targets": String(page.targets.count),
                                                        "duration": "\(MonotonicClock.elapsed(since: started))"])
                    }
                    return page
                } catch {
                    if let unavailable = StoreUnavailableError(error) {
                        log.debug("Reading publish targets failed: store unavailable; retrying",
                                  ["error": unavailable.description])
                    } else {
                        log.error("Reading publish targets failed; retrying", ["error": "\(error)"])
                    }
                    try? await Task.sleep(for: settings.storeRetryInterval)
                }
            }
            return nil
        }
    }

    private func submit(
        _ target: Target, environment: PushEnvironment, isRetry: Bool, template: RequestTemplate,
        credentials: APNsCredentials, instance: InstanceRuntime, run: PublishRun
    ) async {
        await apns.submit(template.request(token: target.token), credentials: credentials,
                          environment: instance.apnsEnvironment(environment)) { [self] result in
            apnsHealth.record(result)
            switch DeliveryOutcome.classify(result, target: target, environment: environment,
                                            isEnvironmentRetry: isRetry, now: Date()) {
            case .final(let counters, let device):
                run.completed(target, counters: counters, device: device)
                activity.record(instanceID: instance.config.id, accepted: device.status == 200)
                metrics.increment("push_notifications_total",
                                  ["status": MetricLabel.status(device.status), "reason": MetricLabel.reason(device.reason)])
            case .retryInEnvironment(let other):
                run.add(PublishCounter.environmentRetries, for: target)
                // Rare (a defaulted environment that was wrong); a task keeps the curl thread free.
                Task {
                    await self.submit(target, environment: other, isRetry: true, template: template,
                                      credentials: credentials, instance: instance, run: run)
                }
            case .unfinished:
                run.abandoned(target)
            }
        }
    }

    /// What became of a checkpoint.
    enum CheckpointOutcome: Equatable {
        /// Written, or nothing to write, or the run lost its lease.
        case done
        /// The store could not write; the results are kept for the next attempt.
        case storeUnavailable
        /// Another failure (logged); the results are kept for the next attempt.
        case failed
    }

    @discardableResult
    private func checkpoint(_ run: PublishRun, log: Logger) async -> CheckpointOutcome {
        guard !run.isLost else { return .done }
        let batch = run.drain()
        guard !batch.isEmpty || batch.cursor > run.claimed.cursor else { return .done }
        do {
            let started = MonotonicClock.now()
            try await store.checkpoint(run.claimed.id, workerID: settings.workerID, cursor: batch.cursor,
                                       counters: batch.counters, deviceResults: batch.results, answered: batch.answered)
            metrics.increment("push_checkpoints_total")
            if log.isEnabled(.debug) {
                log.debug("Checkpoint written", ["cursor": String(batch.cursor), "results": String(batch.results.count),
                                                 "aboveCursor": String(batch.answered.count),
                                                 "duration": "\(MonotonicClock.elapsed(since: started))"])
            }
        } catch PushStoreError.leaseLost {
            // Retrying cannot succeed, and sending on would duplicate the new owner's work.
            log.error("Publish lease lost to another worker; stopping this run")
            run.markLost()
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

    private func finish(_ claimed: ClaimedJob, state: PublishState, summary: String?, total: Int64? = nil,
                        run: PublishRun? = nil, plan: PublishPlan? = nil, log: Logger) async {
        while true {
            do {
                try await store.finishJob(claimed.id, workerID: settings.workerID, state: state, targetsTotal: total,
                                          summary: summary, now: Date())
                break
            } catch let error as StoreUnavailableError where !isStopping {
                // Wait for the store rather than leave the job to be claimed again after its lease expires.
                log.debug("Finishing the publish failed: store unavailable; will retry", ["error": error.description])
                try? await Task.sleep(for: settings.storeRetryInterval)
            } catch {
                log.error("Finishing the publish failed", ["error": "\(error)"])
                return
            }
        }
        metrics.increment("push_publish_jobs_total", ["state": state.rawValue])
        let status = try? await store.publishStatus(instanceID: claimed.job.instanceID, publishID: claimed.job.publishID)
        log.info("Publish finished", [
            "state": state.rawValue, "targets": String(total ?? 0),
            "accepted": String(status?.accepted ?? 0),
            "summary": summary ?? "",
        ])
        guard let status else { return }
        if let url = claimed.job.webhookURL {
            await webhooks.publishFinished(url: url, status: status, requestBody: plan?.requestBody ?? .null)
        }
        if claimed.job.kind == .users, let run, let instance = instances[claimed.job.instanceID.lowercased()] {
            var users = run.userOutcome()
            if claimed.attempt > 1, let started = status.startedAt {
                users = await storedUserOutcome(claimed.job, since: started, log: log)
            }
            await webhooks.publishToUsersAttempt(instance: instance.config, publishID: claimed.job.publishID,
                                                 requested: claimed.job.targets, delivered: users.accepted,
                                                 failed: users.failed, seen: users.seen)
        }
    }

    /// A resumed users publish saw only the devices after its checkpoint; the users' outcome is rebuilt from the
    /// devices' last results recorded since the publish started (a concurrent publish to the same device may have
    /// overwritten one: an approximation, only after a crash).
    private func storedUserOutcome(_ job: PublishJob, since started: Date, log: Logger) async
        -> (accepted: Set<String>, failed: Set<String>, seen: Set<String>)
    {
        var accepted = Set<String>(), failed = Set<String>(), seen = Set<String>()
        for user in job.targets {
            let devices: [Device]
            do {
                devices = try await store.devices(instanceID: job.instanceID, userID: user)
            } catch {
                log.error("Reading a user's devices for the users webhook failed", ["error": "\(error)"])
                continue
            }
            let results = devices.compactMap { device in device.lastResult.flatMap { $0.at >= started ? $0 : nil } }
            guard !results.isEmpty else { continue }
            seen.insert(user)
            if results.contains(where: { $0.status == 200 }) { accepted.insert(user) } else { failed.insert(user) }
        }
        return (accepted, failed, seen)
    }
}

/// The parts of an APNs request every device of a publish shares.
struct RequestTemplate: Sendable {
    let payload: [UInt8]
    let topic: String
    let pushType: APNsPushType?
    let priority: APNsPriority?
    let expiration: Date?
    let collapseID: String?

    init(plan: PublishPlan, payload: [UInt8], topic: String) {
        self.payload = payload
        self.topic = topic
        // The type is resolved once per publish and sent explicitly, so the client does not parse the payload
        // again for every device.
        let effective = plan.pushType.flatMap(APNsPushType.init(rawValue:)) ?? (try? APNsHeaderRules.inferPushType(payload))
        pushType = effective
        var priority = plan.priority.flatMap(APNsPriority.init(rawValue:))
        // Apple rejects priority 10 on background pushes; Beams payloads that turn out to be background (only
        // content-available) with an explicit 10 are sent with 5 rather than failing for every device; without an
        // explicit priority background goes with 5. Alerts state 10 explicitly rather than leaning on APNs' default,
        // so the request says what it means.
        if effective == .background && priority != .powerPrioritized { priority = .powerConsidered }
        if effective == .alert && priority == nil { priority = .immediate }
        self.priority = priority
        expiration = plan.expiration.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        collapseID = plan.collapseID
    }

    func request(token: String) -> APNsRequest {
        APNsRequest(deviceToken: token, payload: payload, topic: topic, pushType: pushType, priority: priority,
                    expiration: expiration, collapseID: collapseID)
    }
}
