import BeamsModel
import Clocks
import Foundation
import Logging
import PushStore
import WebPush

/// Streams one publish's targets into the platforms' senders: reads the store page by page (the next page while
/// the current one is submitted) and routes each target to its platform's lane (`PlatformLane`), whose pump submits
/// it, suspending while that platform's window is full (the backpressure) or while too many results wait for a
/// checkpoint. Answers come back through `DeliveryOutcome` into the run. Devices of a platform
/// the publish has no part for are not sent to, as in Beams.
///
/// The cursor and checkpoint logic does not know platforms: every target is `submitted` to the run in ref order
/// before its lane sees it, and every one ends `completed` or `abandoned` exactly once.
package struct TargetFeeder: Sendable {
    let context: PublishContext
    let run: PublishRun
    let instance: InstanceRuntime
    let log: Logger

    /// Feeds every target after the run's cursor, skipping `answered` (answered by an earlier run above its
    /// cursor), then waits for the answers still in flight (on shutdown, the senders abandon them and this ends too).
    /// - Returns: true when every target has a final result.
    /// - Parameters:
    ///   - round: a local-time publish's round: only its due targets are sent.
    ///   - beforeFirstTarget: run once, when the first page with targets was read, before any of them goes to a
    ///     lane (the runner's deferred count, `RunProgress.countsAtFirstTarget`); never when there is none.
    func deliver(
        plan: PublishPlan, skipping answered: Set<Int64>, round: LocalTimeRound? = nil,
        beforeFirstTarget: (@Sendable () async -> Void)? = nil
    ) async -> Bool {
        let pacing = Pacing(perMinute: plan.delivery?.throttlePerMinute, expiresAt: plan.expiresAt, round: round)
        let lanes = makeLanes(plan, pacing: pacing)
        guard !lanes.isEmpty else {
            run.endSubmission()
            return true
        }
        let reachedEnd = await withTaskGroup(of: Void.self, returning: Bool.self) { group in
            // The pumps start with the first page that has targets: a publish with none starts no task for them
            // (docs/BENCHMARKS.md "The engine's run of a publish with no targets").
            let reachedEnd = await feed(
                lanes: lanes, skipping: answered, pacing: pacing, liveActivity: plan.liveActivitySelector
            ) {
                for lane in lanes.values { group.addTask { await lane.pump() } }
                await beforeFirstTarget?()
            }
            for lane in lanes.values { lane.close() }
            await group.waitForAll()
            return reachedEnd
        }
        // Every pump returned: nothing more goes to a sender (what a cancel waits for before it answers).
        run.endSubmission()
        await run.waitForAnswers()
        return reachedEnd && run.abandonedCount == 0
    }

    /// One lane per platform the publish has a part for.
    private func makeLanes(_ plan: PublishPlan, pacing: Pacing) -> [Platform: PlatformLane] {
        let instanceID = instance.config.id
        func recorder(_ platform: Platform) -> DeliveryRecorder {
            DeliveryRecorder(context: context, run: run, instanceID: instanceID, platform: platform)
        }
        var dispatches: [Platform: any PlatformDispatch] = [:]
        if let payload = plan.apnsPayload {
            let bundleID = instance.config.apns?.topic ?? ""
            // A Live Activity push goes to the app's `.push-type.liveactivity` topic (docs/API.md).
            let topic = plan.liveActivity != nil ? LiveActivityPayload.topic(bundleID: bundleID) : bundleID
            dispatches[.apns] = APNsDispatch(
                context: context, instance: instance,
                template: { RequestTemplate(plan: plan, payload: payload, topic: topic) },
                recorder: recorder(.apns), isLiveActivity: plan.liveActivity != nil,
                expiresAt: pacing.expiresAt)
        }
        if let template = plan.fcm {
            dispatches[.fcm] = FCMDispatch(
                sender: instance.fcm, template: template, recorder: recorder(.fcm),
                expiresAt: pacing.expiresAt)
        }
        if let payload = plan.webPayload,
            let message = try? WebPushMessage(payload: payload, ttl: plan.webTimeToLive ?? WebPushMessage.maxTTL)
        {
            dispatches[.web] = WebPushDispatch(
                sender: instance.web, message: message, recorder: recorder(.web),
                expiresAt: pacing.expiresAt, unreachable: instance.unreachableWeb,
                subscriptions: instance.webSubscriptions)
        } else if plan.webPayload != nil {
            log.error("The stored web payload cannot be sent; skipping the publish's web devices")
        }
        if let message = plan.unifiedPushMessage {
            dispatches[.unifiedpush] = WebPushDispatch(
                sender: instance.unifiedpush, message: message, recorder: recorder(.unifiedpush),
                expiresAt: pacing.expiresAt,
                unreachable: instance.unreachableUnifiedPush, subscriptions: instance.unifiedPushSubscriptions,
                platform: .unifiedpush)
        } else if plan.unifiedPushPayload != nil {
            log.error("The stored unifiedpush payload cannot be sent; skipping the publish's UnifiedPush devices")
        }
        if let message = plan.hmsMessage {
            dispatches[.hms] = HMSDispatch(
                sender: instance.hms, message: message, recorder: recorder(.hms),
                expiresAt: pacing.expiresAt)
        }
        // A lane holds at most a page of targets: a platform whose sender is full holds the others back only once
        // a page of its own targets waits.
        // One pacer for the publish, shared by its lanes: the rate is the publish's, whatever the platforms.
        // Between its tokens the run gives its publish slot up (see `PublishPacer`).
        let pacer = pacing.perMinute.map {
            PublishPacer(perMinute: $0, slots: context.slots, parkAfter: context.settings.parkAfter)
        }
        return Dictionary(
            uniqueKeysWithValues: dispatches.map { platform, dispatch in
                (
                    platform,
                    PlatformLane(
                        capacity: context.settings.pageSize,
                        maxWaitingResults: context.settings.maxUncheckpointedResults,
                        dispatch: dispatch, run: run, pacer: pacer,
                        budget: context.budgets.budget(instanceID: instance.config.id, platform: platform),
                        expiresAt: pacing.expiresAt)
                )
            })
    }

    /// What limits this run's submissions beyond the senders' windows.
    struct Pacing: Sendable {
        /// `throttlePerMinute`: each run paces itself (in its lanes, right before the senders), so a throttled
        /// publish never holds another one back.
        var perMinute: Int?
        /// Nothing is submitted from this moment on; the run ends `expired`.
        var expiresAt: Date?
        var round: LocalTimeRound?
    }

    /// - Returns: true when the last page was fed.
    /// - Parameters:
    ///   - liveActivity: for a Live Activity publish, which token rows are its targets.
    ///   - beforeFirstTarget: run once, when the first page with targets was read, before any goes to a lane.
    private func feed(
        lanes: [Platform: PlatformLane], skipping answered: Set<Int64>, pacing: Pacing,
        liveActivity: LiveActivitySelector?, beforeFirstTarget: () async -> Void
    ) async -> Bool {
        var firstTargets = true
        // The next page is read while the current one is submitted: a page read takes tens of milliseconds, long
        // enough for the senders' windows to drain if reads and submissions took turns.
        var nextPage = prefetch(after: run.claimed.cursor, liveActivity: liveActivity)
        defer { nextPage.cancel() }
        while !run.mustStop {
            guard let page = await nextPage.value else { return false }
            if !page.isLast { nextPage = prefetch(after: page.cursor, liveActivity: liveActivity) }
            if firstTargets, !page.targets.isEmpty {
                firstTargets = false
                await beforeFirstTarget()
            }
            // Devices of a platform the publish has no part for are done at once (the completion estimate counts
            // them: its total is every follower).
            var passedOver = 0
            defer { run.passedOver(passedOver) }
            for target in page.targets where !answered.contains(target.ref) {
                guard let lane = lanes[target.platform] else {
                    passedOver += 1
                    continue
                }
                if let round = pacing.round, !round.isDue(target) { continue }
                if run.mustStop { return false }
                if let expiresAt = pacing.expiresAt, Date() >= expiresAt {
                    run.expire()
                    return false
                }
                run.submitted(target)
                await lane.enqueue(target)
            }
            run.scanned(upTo: page.cursor)
            switch PageEnd(isLast: page.isLast, mustStop: run.mustStop) {
            case .fedAll: return true
            case .stopped: return false
            case .nextPage: continue
            }
        }
        return false
    }

    /// What the feed does once every target of a page was handed to its lane.
    enum PageEnd: Equatable, Sendable {
        /// The last page was handed over: nothing is left to send, whatever stops the run now. (A stop that arrived
        /// after the last target reached its lane used to end the run as not fed, so a shutdown whose answers all
        /// came within the grace period handed a delivered publish back instead of finishing it.)
        case fedAll
        /// The run must stop before the next page.
        case stopped
        case nextPage

        init(isLast: Bool, mustStop: Bool) {
            self = isLast ? .fedAll : mustStop ? .stopped : .nextPage
        }
    }

    /// Reads the page after `cursor` in the background, retrying store errors every `storeRetryInterval` until it
    /// succeeds or the run must stop (then it yields nil). Unstructured on purpose: it must overlap the caller's
    /// submissions, and the caller always awaits or cancels it.
    private func prefetch(after cursor: Int64, liveActivity: LiveActivitySelector?) -> Task<TargetPage?, Never> {
        Task { [context, run, log] in
            let queue = RunStore(context: context, run: run)
            while !Task.isCancelled && !run.mustStop {
                let started = MonotonicClock.now()
                do {
                    let page =
                        if let liveActivity {
                            try await context.store.liveActivityTargets(
                                for: run.claimed.job, selector: liveActivity, after: cursor,
                                limit: context.settings.pageSize, now: Date())
                        } else {
                            try await queue.targets(after: cursor, limit: context.settings.pageSize)
                        }
                    if log.isEnabled(.trace) {
                        log.trace(
                            "Targets page read",
                            [
                                "targets": String(page.targets.count),
                                "duration": "\(MonotonicClock.elapsed(since: started))",
                            ])
                    }
                    return page
                } catch {
                    if let unavailable = StoreUnavailableError(error) {
                        log.debug(
                            "Reading publish targets failed: store unavailable; retrying",
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
}
