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
    func finish(state: PublishState, summary: String?, total: Int64? = nil, plan: PublishPlan? = nil) async {
        let claimed = run.claimed
        let settings = context.settings
        while true {
            do {
                try await context.store.finishJob(claimed.id, workerID: settings.workerID, state: state,
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
        context.metrics.increment("push_publish_jobs_total", ["state": state.rawValue])
        let job = claimed.job
        let status = try? await context.store.publishStatus(instanceID: job.instanceID, publishID: job.publishID)
        log.info("Publish finished", [
            "state": state.rawValue, "targets": String(total ?? 0),
            "accepted": String(status?.accepted ?? 0),
            "summary": summary ?? "",
        ])
        guard let status else { return }
        if let url = job.webhookURL {
            await context.webhooks.publishFinished(url: url, status: status, requestBody: plan?.requestBody ?? .null)
        }
        if job.kind == .users, plan != nil, let instance = context.instance(job.instanceID) {
            var users = run.userOutcome()
            if claimed.attempt > 1, !run.isLiveActivity, let started = status.startedAt {
                users = await storedUserOutcome(since: started)
            }
            await context.webhooks.publishToUsersAttempt(instance: instance.config, publishID: job.publishID,
                                                         requested: job.targets, delivered: users.accepted,
                                                         failed: users.failed, seen: users.seen)
        }
    }

    /// A resumed users publish saw only the devices after its checkpoint; the users' outcome is rebuilt from the
    /// devices' last results recorded since the publish started (a concurrent publish to the same device may have
    /// overwritten one: an approximation, only after a crash).
    private func storedUserOutcome(since started: Date) async
        -> (accepted: Set<String>, failed: Set<String>, seen: Set<String>)
    {
        let job = run.claimed.job
        var accepted = Set<String>(), failed = Set<String>(), seen = Set<String>()
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
            if results.contains(where: { (200...299).contains($0.status) }) { accepted.insert(user) } else { failed.insert(user) }
        }
        return (accepted, failed, seen)
    }
}
