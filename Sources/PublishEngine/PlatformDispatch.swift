import Foundation
import Observability
import PushStore

/// Sends one target on one platform and records its final result in the run, exactly once per `send` (or marks
/// it abandoned when the sender shut down first). `send` suspends while the platform's sender is full.
protocol PlatformDispatch: Sendable {
    func send(_ target: Target) async
}

/// Records a classified outcome: the run's counters and device result, the console's activity, and
/// `push_notifications_total{platform,status,reason}`. The part of a delivery every platform shares.
struct DeliveryRecorder: Sendable {
    let context: PublishContext
    let run: PublishRun
    let instanceID: String
    let platform: Platform
    /// The run's spans, when traced: each result is counted into its platform's batch span.
    var trace: PublishTrace? = PublishTrace.current

    /// - Returns: false for `.retryInEnvironment`, which the caller (APNs) handles.
    @discardableResult
    func record(_ outcome: DeliveryOutcome, for target: Target) -> Bool {
        switch outcome {
        case .final(let counters, let device):
            // Into the batch span first: the run's last result lets the runner end the run (and its batch spans)
            // on another thread, so a result counted in the span after `completed` could open a batch that
            // nothing ends.
            trace?.record(platform, status: device.status, reason: device.reason)
            // `push_notifications_total` is counted by the run and reaches `/metrics` in batches
            // (`NotificationTally`).
            let tally = run.completed(target, counters: counters, device: device, on: platform)
            context.activity.record(instanceID: instanceID, accepted: device.isAccepted, at: device.at)
            tally?.apply(to: context.metrics)
            return true
        case .unfinished:
            run.abandoned(target)
            return true
        case .retryInEnvironment:
            return false
        }
    }

    /// Records a target that was not sent because the instance (or the process) has no credentials for it.
    func notConfigured(_ target: Target, reason: String) {
        record(DeliveryOutcome(.failed(reason), on: platform, target: target, now: Date()), for: target)
    }
}

extension DeviceResult {
    /// The platform's service accepted the notification (APNs and FCM answer 200, push services 201). A result
    /// with a reason is a failure even on a 2xx: Huawei answers HTTP 200 with its result code (80100000 for the
    /// illegal tokens of a partial success, 80300007, …), which must count as failed in the console's chart and a
    /// users publish's per-user result, as it does in the publish's counters.
    package var isAccepted: Bool { (200...299).contains(status) && reason == nil }
}
