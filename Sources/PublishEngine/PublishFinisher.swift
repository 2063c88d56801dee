import BeamsModel
import Foundation
import Logging
import PushStore

/// Ends a publish in the store and queues its webhooks: `FINISHED` for the per-publish URL and, for a users
/// publish, `v1.PublishToUsersAttempt`, whose outcome a resumed run rebuilds from the devices' stored results.
struct PublishFinisher: Sendable {
    let context: PublishContext
    let run: PublishRun
    let log: Logger

    /// Ends the job as `state`, retrying while the store cannot write (unless the engine stops).
    /// - Parameters:
    ///   - total: the publish's targets over every run; nil when it failed before delivering.
    ///   - plan: the decoded plan; nil when it failed before delivering (no users webhook then).
    ///   - counters: the publish's stored counters when the caller read them after the run's last checkpoint (a
    ///     finish changes none); nil: read here when needed.
    func finish(
        state: PublishState, summary: String?, total: Int64? = nil, plan: PublishPlan? = nil,
        counters: PublishCounters? = nil
    ) async {
        if run.held.shard != nil {
            // One shard of a split publish: the publish ends with its last shard, on whichever node ends that.
            if let end = await finishShard(state: state, total: total ?? 0) { await finishSplit(end, plan: plan) }
            return
        }
        await finishJob(state: state, summary: summary, total: total, plan: plan, counters: counters)
    }

    /// Ends the job (this run holds its lease) and queues its webhooks.
    private func finishJob(
        state: PublishState, summary: String?, total: Int64?, plan: PublishPlan?, counters: PublishCounters? = nil
    ) async {
        let claimed = run.claimed
        let settings = context.settings
        while true {
            do {
                try await context.store.finishJob(
                    claimed.id, workerID: settings.workerID, state: state,
                    targetsTotal: total, summary: summary, now: Date())
                break
            } catch let error as StoreUnavailableError where !run.isStopped {
                // Wait for the store rather than leave the job to be claimed again after its lease expires.
                log.debug("Finishing the publish failed: store unavailable; will retry", ["error": error.description])
                await run.pause(for: settings.storeRetryInterval)
            } catch {
                log.error("Finishing the publish failed", ["error": "\(error)"])
                return
            }
        }
        context.metrics.increment(.publishJobs, ["state": state.rawValue])
        let job = claimed.job
        guard job.webhookURL != nil || (job.kind == .users && plan != nil) else {
            // No webhook: only the log line, whose count is the counters'. The whole status (the counters'
            // GROUP BY and two counts of delivery events) cost ~0.15 M instructions a job (docs/BENCHMARKS.md
            // "Publish intake").
            guard log.isEnabled(.info) else { return }
            var stored = counters
            if stored == nil {
                stored = try? await context.store.publishCounters(instanceID: job.instanceID, publishID: job.publishID)
            }
            logFinished(state: state, total: total, accepted: stored?[.accepted(.apns)] ?? 0, summary: summary)
            return
        }
        let status = try? await context.store.publishStatus(instanceID: job.instanceID, publishID: job.publishID)
        logFinished(state: state, total: total, accepted: status?.accepted ?? 0, summary: summary)
        guard let status else { return }
        if let url = job.webhookURL {
            await context.webhooks.publishFinished(url: url, status: status, requestBody: plan?.requestBody ?? .null)
        }
        if job.kind == .users, plan != nil, let instance = context.instance(job.instanceID) {
            var users = run.userOutcome()
            if claimed.attempt > 1, !run.targetsTokenRows, let started = status.startedAt {
                users = await storedUserOutcome(since: started)
            }
            await context.webhooks.publishToUsersAttempt(
                instance: instance.config, publishID: job.publishID,
                requested: job.targets, delivered: users.accepted,
                failed: users.failed, seen: users.seen)
        }
    }

    private func logFinished(state: PublishState, total: Int64?, accepted: Int64, summary: String?) {
        log.info(
            "Publish finished",
            [
                "state": state.rawValue, "targets": String(total ?? 0), "accepted": String(accepted),
                "summary": summary ?? "",
            ])
    }

    /// Ends this run's shard, retrying while the store cannot write (unless the engine stops). - Returns: how the
    /// publish ended when this was its last open shard (this node then holds the job's lease).
    private func finishShard(state: PublishState, total: Int64) async -> ShardedPublishEnd? {
        let queue = RunStore(context: context, run: run)
        while true {
            do {
                let end = try await queue.finishShard(state: state, total: total)
                context.metrics.increment(.publishShards, ["state": state.rawValue])
                log.info("Shard ended", ["state": state.rawValue, "targets": String(total)])
                return end
            } catch let error as StoreUnavailableError where !run.isStopped {
                log.debug("Ending the shard failed: store unavailable; will retry", ["error": error.description])
                await run.pause(for: context.settings.storeRetryInterval)
            } catch {
                // Lost to another node (which ends it), or the engine stops: the shard's lease runs out.
                log.error("Ending the shard failed", ["error": "\(error)"])
                return nil
            }
        }
    }

    /// Finishes a split publish whose shards have all ended, as `end` says (this node holds the job's lease).
    func finishSplit(_ end: ShardedPublishEnd, plan: PublishPlan?) async {
        let summary: String?
        switch end.state {
        case .cancelled: summary = "cancelled"
        case .expired: summary = "delivery window closed before every shard was sent; the rest was not sent"
        case .failed: summary = "a shard failed"
        default:
            let job = run.claimed.job
            let stored = try? await context.store.publishStatus(instanceID: job.instanceID, publishID: job.publishID)
            summary = PublishSummary.notes(counters: stored?.counters ?? [:])
        }
        await finishJob(state: end.state, summary: summary, total: end.targetsTotal, plan: plan)
    }

    /// A resumed users publish saw only the devices after its checkpoint; the users' outcome is rebuilt from the
    /// devices' last results recorded since the publish started (a concurrent publish to the same device may have
    /// overwritten one: an approximation, only after a crash).
    private func storedUserOutcome(since started: Date) async
        -> (accepted: Set<String>, failed: Set<String>, seen: Set<String>)
    {
        let job = run.claimed.job
        var accepted = Set<String>()
        var failed = Set<String>()
        var seen = Set<String>()
        for user in job.targets {
            let devices: [Device]
            do {
                devices = try await context.store.devices(instanceID: job.instanceID, userID: user)
            } catch {
                log.error("Reading a user's devices for the users webhook failed", ["error": "\(error)"])
                continue
            }
            let results = devices.compactMap { device in device.lastResult.flatMap { $0.at >= started ? $0 : nil } }
            guard !results.isEmpty else { continue }
            seen.insert(user)
            if results.contains(where: { (200...299).contains($0.status) }) {
                accepted.insert(user)
            } else {
                failed.insert(user)
            }
        }
        return (accepted, failed, seen)
    }
}
