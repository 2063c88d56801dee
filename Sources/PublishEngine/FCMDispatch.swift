import FCMClient
import Foundation
import HTTPClient
import PushStore

/// Sends FCM targets: the publish's message template with the device's registration token, through the
/// instance's sender. Each request carries its run's `RetryScope` and a deadline (the publish's `expiresAt`, the
/// message's `time_to_live` from now): a retry never outlives either, nor a cancel.
struct FCMDispatch: PlatformDispatch {
    let sender: (any FCMSending)?
    let template: FCMMessageTemplate
    let recorder: DeliveryRecorder
    /// The publish's delivery window (`x_delivery.expiresAt`), if any.
    var expiresAt: Date? = nil

    func send(_ target: Target) async {
        guard let sender else {
            recorder.notConfigured(target, reason: "NoFCMCredentials")
            return
        }
        let now = Date()
        let deadline = RetryDeadline(expiresAt: expiresAt, timeToLive: template.timeToLive.map(Double.init), from: now)
        let run = recorder.run
        let window = expiresAt
        let request = FCMRequest(token: target.token, message: template, deadline: deadline, retries: run.retries)
        await sender.submit(request) { result in
            if case .failure(.expired) = result, let window, deadline.at == window { run.retryOutlivedWindow() }
            recorder.record(DeliveryOutcome.classify(result, target: target, now: Date()), for: target)
        }
    }
}
