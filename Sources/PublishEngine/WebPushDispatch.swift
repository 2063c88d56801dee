import Clocks
import Foundation
import HTTPClient
import PushStore
import WebPush

/// Sends Web Push targets: the publish's message to the device's subscription, stored as its token in the
/// canonical form the device API writes (`{"endpoint":…,"keys":{"auth":…,"p256dh":…}}`) and parsed once per
/// instance (`WebPushSubscriptions`). UnifiedPush devices are sent the same way (`platform` `.unifiedpush`, the
/// instance's open-endpoint sender), with ntfy's 507 told apart.
struct WebPushDispatch: PlatformDispatch {
    let sender: (any WebPushSending)?
    let message: WebPushMessage
    let recorder: DeliveryRecorder
    /// The publish's delivery window (`x_delivery.expiresAt`), if any. With the message's `TTL` from now, the
    /// deadline no retry outlives; the run's `RetryScope` ends waiting retries when it is cancelled.
    var expiresAt: Date? = nil
    /// The instance's streaks of unanswered deliveries (nil: none kept, engine tests).
    var unreachable: UnreachableSubscriptions? = nil
    /// The instance's parsed subscriptions (nil: each target's token is parsed for this delivery, engine tests).
    var subscriptions: WebPushSubscriptions? = nil
    /// `.web` or `.unifiedpush`: the platform outcomes are recorded under.
    var platform: Platform = .web

    func send(_ target: Target) async {
        guard let sender else {
            recorder.notConfigured(target, reason: platform == .web ? "NoWebPushCredentials" : "NoUnifiedPushConfig")
            return
        }
        guard let subscription = subscriptions?.subscription(target.token) ?? WebPushSubscriptions.parse(target.token)
        else {
            // Registration validated it; a stored token that no longer parses (written by hand, damaged) is the
            // device's fault, not the publish's: record it, keep going.
            recorder.record(
                DeliveryOutcome(.failed("InvalidSubscription"), on: platform, target: target, now: Date()), for: target)
            return
        }
        let deadline = RetryDeadline(expiresAt: expiresAt, timeToLive: Double(message.ttl), from: Date())
        let run = recorder.run
        let window = expiresAt
        let notification = WebPushNotification(
            subscription: subscription, message: message, deadline: deadline,
            retries: run.retries)
        let platform = self.platform
        await sender.submit(notification) { [unreachable] result in
            if case .failure(.expired) = result, let window, deadline.at == window { run.retryOutlivedWindow() }
            var verdict =
                platform == .web ? DeliveryOutcome.verdict(result) : DeliveryOutcome.unifiedPushVerdict(result)
            if let unreachable {
                verdict = unreachable.judge(verdict, device: target.ref, now: MonotonicClock.seconds())
            }
            recorder.record(DeliveryOutcome(verdict, on: platform, target: target, now: Date()), for: target)
        }
    }
}
