import FCMClient
import Foundation
import PushStore

/// Sends FCM targets: the publish's message template with the device's registration token, through the
/// instance's sender.
struct FCMDispatch: PlatformDispatch {
    let sender: (any FCMSending)?
    let template: FCMMessageTemplate
    let recorder: DeliveryRecorder

    func send(_ target: Target) async {
        guard let sender else {
            recorder.notConfigured(target, reason: "NoFCMCredentials")
            return
        }
        await sender.submit(FCMRequest(token: target.token, message: template)) { result in
            recorder.record(DeliveryOutcome.classify(result, target: target, now: Date()), for: target)
        }
    }
}
