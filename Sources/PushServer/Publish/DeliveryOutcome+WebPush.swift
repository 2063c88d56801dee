import Foundation
import HTTPClient
import PushStore
import WebPush

extension DeliveryOutcome {
    /// What one Web Push result means for a publish. 404 and 410 (the subscription expired or was revoked)
    /// invalidate the device, as APNs' 410 does; every other failure is counted with its reason and the device kept
    /// (413 is the message's fault, 400/401/403 the configuration's, 429/5xx were retried by the sender). A pure
    /// function, tested without sockets.
    static func classify(_ result: WebPushResult, target: Target, now: Date) -> DeliveryOutcome {
        let reason: String
        var status = 0
        var effect = DeviceEffect.none
        switch result {
        case .failure(.shutdown):
            return .unfinished
        case .response(.accepted(let code), _):
            return accepted(on: .web, status: code, target: target, now: now)
        case .response(.subscriptionGone(let code), _):
            reason = "SubscriptionGone"
            status = code
            effect = .badToken
        case .response(.payloadTooLarge, _):
            reason = "PayloadTooLarge"
            status = 413
        case .response(.retry(let code, _), _):
            reason = code == 429 ? "TooManyRequests" : "PushServiceUnavailable"
            status = code
        case .response(.configurationError(let code, _), _):
            reason = code == 400 ? "BadRequest" : "VAPIDRejected"
            status = code
        case .response(.unknown(let code), _):
            reason = "UnexpectedStatus"
            status = code
        case .failure(.hostNotAllowed):
            reason = "DestinationRefused"
        case .failure(.transport(let error, _)):
            reason = error.kind == .refusedDestination ? "DestinationRefused" : "TransportError"
        case .failure(.encryption):
            reason = "EncryptionFailed"
        }
        return failed(reason, on: .web, status: status, effect: effect, target: target, now: now)
    }

    /// Every reason a web delivery can carry (bounded: the metric label set is built from it).
    static let webReasons: Set<String> = [
        "SubscriptionGone", "PayloadTooLarge", "TooManyRequests", "PushServiceUnavailable", "BadRequest",
        "VAPIDRejected", "UnexpectedStatus", "TransportError", "DestinationRefused", "EncryptionFailed",
        "InvalidSubscription", "NoWebPushCredentials",
    ]
}
