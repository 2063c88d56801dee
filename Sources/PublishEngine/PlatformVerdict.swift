import BeamsModel
import Foundation
import PushStore

/// What one FCM or Web Push result means, before it is counted: each platform maps its own results to it
/// (`DeliveryOutcome+FCM`, `DeliveryOutcome+WebPush`), and `DeliveryOutcome(_:on:target:now:)` counts every
/// platform's the same way. APNs has rules of its own (timestamps, the environment retry) in
/// `DeliveryOutcome.classify`.
package enum PlatformVerdict: Equatable {
    /// No final result: the sender shut down first.
    case unfinished
    /// The platform's service accepted the notification with `status`.
    case accepted(status: Int)
    /// A final failure with its reason; `status` 0: no answer from the service. `.badToken` invalidates the device.
    case failed(String, status: Int = 0, effect: DeviceEffect = .none)
}

extension DeliveryOutcome {
    /// Counts `verdict` on `platform`: accepted or failed with its reason, and a bad token as a removed device, in
    /// all and per platform.
    package init(_ verdict: PlatformVerdict, on platform: Platform, target: Target, now: Date) {
        switch verdict {
        case .unfinished:
            self = .unfinished
        case .accepted(let status):
            self = .final(
                counters: [.accepted(platform): 1],
                device: DeviceResult(device: target.ref, status: status, at: now))
        case .failed(let reason, let status, let effect):
            var counters: PublishCounters = [.failed(platform, reason: reason): 1]
            if effect == .badToken {
                counters[.devicesRemoved] = 1
                counters[.devicesRemovedOn(platform)] = 1
            }
            self = .final(
                counters: counters,
                device: DeviceResult(device: target.ref, status: status, reason: reason, at: now, effect: effect))
        }
    }
}
