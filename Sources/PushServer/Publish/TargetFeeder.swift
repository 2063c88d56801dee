import APNsClient
import Clocks
import Foundation
import Logging
import PushStore

/// Streams one publish's targets into the sender: reads the store page by page (the next page while the current
/// one is submitted) and submits each APNs target, suspending while the sender's window is full (the backpressure)
/// or while too many results wait for a checkpoint. Answers come back through `DeliveryOutcome` into the run.
struct TargetFeeder: Sendable {
    let context: PublishContext
    let run: PublishRun
    let instance: InstanceRuntime
    let log: Logger

    /// Feeds every target after the run's cursor, skipping `answered` (answered by an earlier run above its
    /// cursor), then waits for the answers still in flight (on shutdown, the sender abandons them and this ends too).
    /// - Returns: true when every target has a final result.
    func deliver(plan: PublishPlan, skipping answered: Set<Int64>) async -> Bool {
        guard let payload = plan.apnsPayload else { return true }
        let template = RequestTemplate(plan: plan, payload: payload, topic: instance.config.apns?.topic ?? "")
        let reachedEnd = await feed(template: template, skipping: answered)
        await run.waitForAnswers()
        return reachedEnd && run.abandonedCount == 0
    }

    /// - Returns: true when the last page was fed.
    private func feed(template: RequestTemplate, skipping answered: Set<Int64>) async -> Bool {
        let settings = context.settings
        // The next page is read while the current one is submitted: a page read takes tens of milliseconds, long
        // enough for the APNs window to drain if reads and submissions took turns.
        var nextPage = prefetch(after: run.claimed.cursor)
        defer { nextPage.cancel() }
        while !run.mustStop {
            guard let page = await nextPage.value else { return false }
            if !page.isLast { nextPage = prefetch(after: page.cursor) }
            for target in page.targets where target.platform == .apns && !answered.contains(target.ref) {
                guard await run.waitForRoom(limit: settings.maxUncheckpointedResults) else { return false }
                run.submitted(target)
                guard let credentials = instance.credentials else {
                    run.completed(target, counters: [PublishCounter.failed("NoAPNsCredentials"): 1],
                                  device: DeviceResult(device: target.ref, status: 0, reason: "NoAPNsCredentials", at: Date()))
                    continue
                }
                await submit(target, environment: target.environment, isRetry: false, template: template,
                             credentials: credentials)
            }
            if run.mustStop { return false }
            run.scanned(upTo: page.cursor)
            if page.isLast { return true }
        }
        return false
    }

    /// Reads the page after `cursor` in the background, retrying store errors every `storeRetryInterval` until it
    /// succeeds or the run must stop (then it yields nil). Unstructured on purpose: it must overlap the caller's
    /// submissions, and the caller always awaits or cancels it.
    private func prefetch(after cursor: Int64) -> Task<TargetPage?, Never> {
        Task { [context, run, log] in
            let job = run.claimed.job
            while !Task.isCancelled && !run.mustStop {
                let started = MonotonicClock.now()
                do {
                    let page = try await context.store.targets(for: job, after: cursor, limit: context.settings.pageSize)
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
                    await run.pause(for: context.settings.storeRetryInterval)
                }
            }
            return nil
        }
    }

    /// Hands one target to the sender; its answer is classified and recorded in the run when it comes.
    private func submit(
        _ target: Target, environment: PushEnvironment, isRetry: Bool, template: RequestTemplate,
        credentials: APNsCredentials
    ) async {
        await context.sender.submit(template.request(token: target.token), credentials: credentials,
                                    environment: instance.apnsEnvironment(environment)) { result in
            context.apnsHealth.record(result)
            switch DeliveryOutcome.classify(result, target: target, environment: environment,
                                            isEnvironmentRetry: isRetry, now: Date()) {
            case .final(let counters, let device):
                run.completed(target, counters: counters, device: device)
                context.activity.record(instanceID: instance.config.id, accepted: device.status == 200)
                context.metrics.increment("push_notifications_total", ["status": MetricLabel.status(device.status),
                                                                      "reason": MetricLabel.reason(device.reason)])
            case .retryInEnvironment(let other):
                run.add(PublishCounter.environmentRetries, for: target)
                // Rare (a defaulted environment that was wrong); a task keeps the sender's thread free.
                Task {
                    await submit(target, environment: other, isRetry: true, template: template, credentials: credentials)
                }
            case .unfinished:
                run.abandoned(target)
            }
        }
    }
}
