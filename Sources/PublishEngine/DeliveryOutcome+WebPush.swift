import Foundation
import HTTPClient
import PushStore
import WebPush

extension DeliveryOutcome {
    /// What one Web Push result means for a publish. 404 and 410 (the subscription expired or was revoked)
    /// invalidate the device, as APNs' 410 does; every other failure is counted with its reason and the device kept
    /// (413 is the message's fault, 400/401/403 the configuration's, 429/5xx were retried by the sender); repeated
    /// unanswered deliveries invalidate it as `SubscriptionUnreachable` (`UnreachableSubscriptions`). A pure
    /// function, tested without sockets.
    package static func classify(_ result: WebPushResult, target: Target, now: Date) -> DeliveryOutcome {
        DeliveryOutcome(verdict(result), on: .web, target: target, now: now)
    }

    /// The Web Push table behind `classify`: which results are final, accepted, or failed with which reason.
    package static func verdict(_ result: WebPushResult) -> PlatformVerdict {
        switch result {
        case .failure(.shutdown):
            return .unfinished
        case .response(.accepted(let code), _):
            return .accepted(status: code)
        case .response(.subscriptionGone(let code), _):
            return .failed("SubscriptionGone", status: code, effect: .badToken)
        case .response(.payloadTooLarge, _):
            return .failed("PayloadTooLarge", status: 413)
        case .response(.retry(let code, _), _):
            return .failed(code == 429 ? "TooManyRequests" : "PushServiceUnavailable", status: code)
        case .response(.configurationError(let code, _), _):
            return .failed(code == 400 ? "BadRequest" : "VAPIDRejected", status: code)
        case .response(.unknown(let code), _):
            return .failed("UnexpectedStatus", status: code)
        case .failure(.hostNotAllowed):
            return .failed("DestinationRefused")
        case .failure(.tooManyHosts):
            return .failed("TooManyHosts")
        case .failure(.transport(let error, _)):
            return .failed(error.kind == .refusedDestination ? "DestinationRefused" : "TransportError")
        case .failure(.encryption):
            return .failed("EncryptionFailed")
        case .failure(.cancelled):
            return .failed("Cancelled")
        case .failure(.expired):
            return .failed("Expired")
        }
    }

    /// Every reason a web delivery can carry (bounded: the metric label set is built from it).
    static let webReasons: Set<String> = [
        "SubscriptionGone", "PayloadTooLarge", "TooManyRequests", "PushServiceUnavailable", "BadRequest",
        "VAPIDRejected", "UnexpectedStatus", "TransportError", "DestinationRefused", "EncryptionFailed",
        "InvalidSubscription", "NoWebPushCredentials", "SubscriptionUnreachable", "Cancelled", "Expired",
        "TooManyHosts", "NoActiveSubscriber", "NoUnifiedPushConfig",
    ]

    /// What one UnifiedPush result means: the Web Push table (the push servers answer as RFC 8030 says: NextPush's
    /// 201 and 404, autopush's 201/404/410/413 and 503 with `Retry-After`, ntfy's 200 all fit it), plus ntfy's 507
    /// ("no active subscriber": the phone has not polled its topic lately; retried like any 5xx, then this reason,
    /// and the device kept, since ntfy answers 5xx precisely so that a temporary state removes nothing).
    package static func unifiedPushVerdict(_ result: WebPushResult) -> PlatformVerdict {
        if case .response(.retry(507, _), _) = result { return .failed("NoActiveSubscriber", status: 507) }
        return verdict(result)
    }
}
