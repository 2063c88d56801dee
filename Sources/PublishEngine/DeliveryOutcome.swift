import APNsClient
import BeamsModel
import Foundation
import PushStore

/// What one APNs result means for a publish: counters, the device's health, or a retry in the other environment.
///
/// A pure function of the result and the target, tested without sockets.
package enum DeliveryOutcome: Equatable {
    /// A final result: add `counters`, record `device`.
    case final(counters: PublishCounters, device: DeviceResult)
    /// BadDeviceToken for a device whose environment was defaulted, first try: send again to `environment`.
    case retryInEnvironment(PushEnvironment)
    /// No final result (the client shut down before an answer): the target stays below the checkpoint and is
    /// sent again when the publish resumes.
    case unfinished

    /// - Parameters:
    ///   - environment: the environment this attempt went to.
    ///   - isEnvironmentRetry: this attempt is the retry in the other environment.
    package static func classify(
        _ result: APNsResult, target: Target, environment: PushEnvironment, isEnvironmentRetry: Bool, now: Date
    ) -> DeliveryOutcome {
        switch result {
        case .response(let response):
            let reason = response.reason
            var counters: PublishCounters = [:]
            var effect = DeviceEffect.none
            switch (response.status, reason) {
            case (200, _) where !isEnvironmentRetry:
                // The common answer: shared counters and no reason, nothing built per result.
                return .final(
                    counters: acceptedAPNs,
                    device: DeviceResult(
                        device: target.ref, status: 200, reason: reason?.rawValue, at: now, effect: .none))
            case (200, _):
                counters[.accepted(.apns)] = 1
                if isEnvironmentRetry {
                    // The retry proved the token belongs to the other environment: remember it.
                    effect = .environment(environment)
                    counters[.environmentCorrected] = 1
                }
            case (410, _):
                counters[.failed(.apns, reason: (reason ?? .unregistered).rawValue)] = 1
                let since = response.timestamp ?? now
                effect = .unregistered(since: since)
                // Apple's rule: the token is dead only if it was not registered again after APNs' timestamp.
                if since > target.lastRegisteredAt { counters[.devicesRemoved] = 1 }
            case (400, .badDeviceToken?) where !target.environmentDeclared && !isEnvironmentRetry:
                return .retryInEnvironment(environment == .sandbox ? .production : .sandbox)
            case (400, .badDeviceToken?), (400, .deviceTokenNotForTopic?):
                counters[.failed(.apns, reason: reason?.rawValue ?? APNsReason.badDeviceToken.rawValue)] = 1
                effect = .badToken
                counters[.devicesRemoved] = 1
            default:
                counters[.failed(.apns, reason: reason?.rawValue ?? "HTTP\(response.status)")] = 1
            }
            return .final(
                counters: counters,
                device: DeviceResult(
                    device: target.ref, status: response.status, reason: reason?.rawValue,
                    at: now, effect: effect))
        case .failure(let failure):
            let reason: String
            switch failure {
            case .shutdown:
                return .unfinished
            case .invalidRequest(let violation):
                reason = Self.name(violation)
            case .transport:
                reason = "TransportError"
            case .cancelled:
                reason = "Cancelled"
            case .expired:
                reason = "Expired"
            case .configuration(.rejected(_, let apnsReason)):
                reason = apnsReason.rawValue
            case .configuration(.expiredTokenBeforeRefreshFloor):
                // What APNs answered; the token was too young to replace (clock skew), so nothing was re-sent.
                reason = APNsReason.expiredProviderToken.rawValue
            case .configuration(.signingFailed):
                reason = "ProviderTokenSigningFailed"
            }
            return .final(
                counters: [.failed(.apns, reason: reason): 1],
                device: DeviceResult(device: target.ref, status: 0, reason: reason, at: now))
        }
    }

    /// The counters of an accepted APNs notification, built once (a dictionary per result otherwise).
    private static let acceptedAPNs: PublishCounters = [.accepted(.apns): 1]

    /// Reasons the server gives itself (no APNs answer, or a local rule), besides Apple's own names: the metric
    /// label set (`MetricLabel.reasons`) is built from these.
    static let localReasons: Set<String> = [
        "InvalidPayload", "InvalidHeader", "TransportError", "ProviderTokenSigningFailed", "NoAPNsCredentials",
        "PushTypeNeedsTokenAuthentication", "Cancelled", "Expired",
    ]

    /// A reason name for a local header-rule violation, in Apple's CamelCase style.
    package static func name(_ violation: APNsViolation) -> String {
        switch violation {
        case .payloadTooLarge: return "PayloadTooLarge"
        case .collapseIDTooLong: return "BadCollapseId"
        case .invalidAPNsID: return "BadMessageId"
        case .invalidExpiration: return "BadExpirationDate"
        case .emptyPayload: return "PayloadEmpty"
        case .backgroundWithImmediatePriority: return "BadPriority"
        case .topicDoesNotMatchPushType: return "BadTopic"
        case .emptyTopic: return "MissingTopic"
        case .emptyDeviceToken: return "MissingDeviceToken"
        case .deviceTokenNotHex, .deviceTokenOddLength: return "BadDeviceToken"
        case .payloadNotJSONObject: return "InvalidPayload"
        case .controlCharacterInHeader: return "InvalidHeader"
        case .pushTypeNeedsTokenAuthentication: return "PushTypeNeedsTokenAuthentication"
        }
    }
}
