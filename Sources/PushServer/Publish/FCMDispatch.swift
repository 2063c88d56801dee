import FCMClient
import Foundation
import PushStore

/// Sends FCM targets: the publish's message template with the device's registration token.
struct FCMDispatch: PlatformDispatch {
    let sender: (any FCMSending)?
    let account: FCMAccount?
    let template: FCMMessageTemplate
    let recorder: DeliveryRecorder

    func send(_ target: Target) async {
        guard let sender, let account else {
            recorder.notConfigured(target, reason: "NoFCMCredentials")
            return
        }
        await sender.submit(template.body(token: target.token), account: account) { delivery in
            recorder.record(DeliveryOutcome.classify(delivery, target: target, now: Date()), for: target)
        }
    }
}
