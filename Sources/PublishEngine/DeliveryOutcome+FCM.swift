import FCMClient
import Foundation
import Observability
import PushStore

extension DeliveryOutcome {
    /// What one FCM result means for a publish. Dead tokens (`UNREGISTERED`, a token FCM calls invalid,
    /// `SENDER_ID_MISMATCH`) invalidate the device, as APNs' bad-token answers do; every other failure is counted
    /// with its reason and the device kept (retries happened in the sender; auth and configuration errors are
    /// the operator's to fix, not the device's). A pure function, tested without sockets.
    package static func classify(_ result: FCMResult, target: Target, now: Date) -> DeliveryOutcome {
        DeliveryOutcome(verdict(result), on: .fcm, target: target, now: now)
    }

    /// The FCM table behind `classify`: which results are final, accepted, or failed with which reason.
    package static func verdict(_ result: FCMResult) -> PlatformVerdict {
        switch result {
        case .failure(.shutdown):
            return .unfinished
        case .response(.sent, _):
            return .accepted(status: 200)
        case .response(.invalidToken(let info), _), .response(.senderMismatch(let info), _):
            return .failed(fcmReason(info), status: info.httpStatus, effect: .badToken)
        case .response(.retry(let info, _), _), .response(.accessTokenRejected(let info), _),
            .response(.authError(let info), _), .response(.invalidMessage(let info), _),
            .response(.configuration(let info), _):
            return .failed(fcmReason(info), status: info.httpStatus)
        case .response(.unknown, _):
            return .failed("UnknownError")
        case .failure(.transport):
            return .failed("TransportError")
        case .failure(.cancelled):
            return .failed("Cancelled")
        case .failure(.expired):
            return .failed("Expired")
        case .failure(.accessToken(let error)):
            // A refusal is the operator's to fix (`/ready` names it); anything else may pass by itself.
            return .failed(error.isConfigurationError ? "AccessTokenRefused" : "AccessTokenUnavailable")
        }
    }

    /// FCM's own name for an error: the FCM code (`UNREGISTERED`), else the canonical status (`NOT_FOUND`), else
    /// `HTTP<status>`; names outside `fcmReasons` become `UnknownError`, so a hostile or broken answer cannot grow
    /// a publish's counters.
    static func fcmReason(_ info: FCMErrorInfo) -> String {
        let name = info.errorCode ?? info.status ?? "HTTP\(info.httpStatus)"
        return fcmReasons.contains(name)
            || MetricLabel.statuses.contains(info.httpStatus) && name == "HTTP\(info.httpStatus)"
            ? name : "UnknownError"
    }

    /// FCM v1's error codes and canonical statuses (Firebase reference "ErrorCode"), plus the server's own.
    static let fcmReasons: Set<String> = [
        "UNSPECIFIED_ERROR", "INVALID_ARGUMENT", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED",
        "UNAVAILABLE", "INTERNAL", "THIRD_PARTY_AUTH_ERROR", "PERMISSION_DENIED", "UNAUTHENTICATED", "NOT_FOUND",
        "RESOURCE_EXHAUSTED", "UnknownError", "TransportError", "AccessTokenUnavailable", "AccessTokenRefused",
        "NoFCMCredentials", "Cancelled", "Expired",
    ]
}
