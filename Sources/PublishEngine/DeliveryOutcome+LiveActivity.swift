import APNsClient
import BeamsModel
import Foundation
import PushStore

extension DeliveryOutcome {
    /// The outcome for a Live Activity token instead of a device: a 410 or BadDeviceToken kills only that token
    /// (counted as `liveActivity.tokensRemoved`, never `devices.removed`); DeviceTokenNotForTopic kills nothing,
    /// since it usually means the push went to the wrong topic, not that the token is dead (docs/API.md); an
    /// environment correction is not recorded (the device's environment belongs to its device token).
    package func forLiveActivityToken() -> DeliveryOutcome {
        guard case .final(var counters, var result) = self else { return self }
        let removed = counters.remove(.devicesRemoved) ?? 0
        counters.remove(.environmentCorrected)
        let notForTopic = result.reason == APNsReason.deviceTokenNotForTopic.rawValue
        switch result.effect {
        case .unregistered, .badToken:
            if notForTopic {
                result.effect = .none
            } else if removed > 0 {
                counters[.liveActivityTokensRemoved] = removed
            }
        case .none, .environment:
            result.effect = .none
        }
        return .final(counters: counters, device: result)
    }
}

extension DeviceResult {
    /// The Live Activity row to delete for this result (see `DeliveryOutcome.forLiveActivityToken`), nil to keep it.
    package var liveActivityTokenDeath: LiveActivityTokenDeath? {
        switch effect {
        case .unregistered(let since): LiveActivityTokenDeath(ref: device, since: since)
        case .badToken: LiveActivityTokenDeath(ref: device, since: at)
        case .none, .environment: nil
        }
    }
}
