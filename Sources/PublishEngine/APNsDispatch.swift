import APNsClient
import BeamsModel
import Foundation
import Locking
import PushStore

/// Sends APNs targets: the publish's shared request with the device's token, to the device's environment, and
/// once more to the other environment when a defaulted environment turns out wrong.
///
/// A class, not a struct: each request's result callback keeps the dispatch (for an environment retry), and a
/// struct of a dozen references would be copied into every callback, a retain and a release per reference per
/// notification; a class is one.
final class APNsDispatch: PlatformDispatch {
    let context: PublishContext
    let instance: InstanceRuntime
    /// The publish's shared request, built when the first target is sent (`template()`).
    private let builtTemplate = Locked<RequestTemplate?>(nil)
    private let makeTemplate: @Sendable () -> RequestTemplate
    let recorder: DeliveryRecorder
    /// The targets are Live Activity token rows: results count and delete tokens, never devices.
    let isLiveActivity: Bool
    /// The publish's delivery window (`x_delivery.expiresAt`), if any: with `apns-expiration`, the moment past
    /// which the APNs client schedules no retry; the run's `RetryScope` ends waiting retries when it is cancelled.
    let expiresAt: Date?

    /// - Parameter template: builds the publish's shared request; called once, when the first target is sent.
    init(
        context: PublishContext, instance: InstanceRuntime, template: @escaping @Sendable () -> RequestTemplate,
        recorder: DeliveryRecorder, isLiveActivity: Bool = false, expiresAt: Date? = nil
    ) {
        self.context = context
        self.instance = instance
        makeTemplate = template
        self.recorder = recorder
        self.isLiveActivity = isLiveActivity
        self.expiresAt = expiresAt
    }

    func send(_ target: Target) async {
        guard let credentials = instance.credentials else {
            recorder.notConfigured(target, reason: "NoAPNsCredentials")
            return
        }
        await submit(
            target, template: template(), environment: target.environment, isRetry: false, credentials: credentials)
    }

    /// The shared request, built at the first target rather than with the lanes: a publish that sends nothing on
    /// APNs (nobody follows its interests, the instance has no credentials) never builds it, and building it can
    /// take a parse of the whole payload for its push type (~50,000 instructions, docs/BENCHMARKS.md "Intake's
    /// store calls per job").
    private func template() -> RequestTemplate {
        builtTemplate.withLock { built in
            if let built { return built }
            let template = makeTemplate()
            built = template
            return template
        }
    }

    private func submit(
        _ target: Target, template: RequestTemplate, environment: PushEnvironment, isRetry: Bool,
        credentials: APNsCredentials
    ) async {
        var request = template.request(token: target.token)
        // `expiration` 0 is APNs' "do not store", not a deadline here: a request lost to a GOAWAY is still re-sent.
        let lifetime = template.expiration.flatMap { $0.timeIntervalSince1970 > 0 ? $0 : nil }
        // The earlier of the two, without building an array per target.
        switch (expiresAt, lifetime) {
        case (let window?, let lifetime?): request.retryDeadline = min(window, lifetime)
        case (let window, let lifetime): request.retryDeadline = window ?? lifetime
        }
        request.retries = recorder.run.retries
        let deadline = request.retryDeadline
        let window = expiresAt
        let run = recorder.run
        await context.sender.submit(
            request, credentials: credentials,
            environment: instance.apnsEnvironment(environment)
        ) { [self] result in
            if case .failure(.expired) = result, let window, deadline == window { run.retryOutlivedWindow() }
            // One clock reading per result, for the health, the device result and the activity minute.
            let now = Date()
            context.apnsHealth.record(result, at: now)
            var outcome = DeliveryOutcome.classify(
                result, target: target, environment: environment,
                isEnvironmentRetry: isRetry, now: now)
            if isLiveActivity { outcome = outcome.forLiveActivityToken() }
            if case .retryInEnvironment(let other) = outcome {
                recorder.run.add(.environmentRetries, for: target)
                // Rare (a defaulted environment that was wrong); a task keeps the sender's thread free.
                Task {
                    await submit(
                        target, template: template, environment: other, isRetry: true, credentials: credentials)
                }
                return
            }
            recorder.record(outcome, for: target)
        }
    }
}
