import Foundation

/// Why FCM cannot be used with an instance's credentials right now: what `/ready` and the console show for the
/// instance. Each kind needs an operator (a new key, an IAM role, the right project), not a retry; the sender
/// keeps the devices and records every affected delivery as failed with its reason.
package struct FCMAuthProblem: Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable, CaseIterable {
        /// The token endpoint refused the service account (`invalid_grant`: the key was deleted or rotated, or
        /// the clock is off by minutes; `invalid_client`, …). Cleared by the next token it issues.
        case accessTokenRefused
        /// FCM answered `401 UNAUTHENTICATED` to consecutive freshly fetched tokens.
        case accessTokenRejected
        /// `403 PERMISSION_DENIED`: the account may not send for the project (no Firebase Cloud Messaging role, or
        /// the FCM API is disabled in the project).
        case permissionDenied
        /// `401 THIRD_PARTY_AUTH_ERROR`: a credential Firebase holds for the app (APNs certificate or key, Web
        /// Push) is invalid.
        case thirdPartyAuthError
        /// `403 SENDER_ID_MISMATCH` while FCM has accepted nothing from this sender: the devices' tokens belong to
        /// another Firebase project than the configured one (the wrong file or `projectId`).
        case senderIDMismatch
        /// `404` without an FCM code: the project id (or the endpoint) is wrong.
        case projectNotFound
    }

    package var kind: Kind
    /// What the token endpoint or FCM said (bounded: their messages are capped at 512 bytes).
    package var detail: String
    /// When this run of failures began (wall clock).
    package var since: Date
    /// Consecutive failures of this kind (token fetches refused, or deliveries answered so).
    package var count: Int

    package init(kind: Kind, detail: String, since: Date, count: Int) {
        self.kind = kind
        self.detail = detail
        self.since = since
        self.count = count
    }

    package var description: String { "\(kind.rawValue) ×\(count) since \(since): \(detail)" }
}

/// The send-side half of `FCMAuthProblem` (token refusals live in `AccessTokenState`): the current run of
/// auth answers from `messages:send`, ended by the first accepted message. Pure, tested without sockets.
struct FCMSendAuthTracker: Sendable, Equatable {
    private(set) var problem: FCMAuthProblem?
    /// FCM accepted at least one message from this sender (so a `SENDER_ID_MISMATCH` means that one token is
    /// foreign, not that the whole project is wrong).
    private(set) var hasSent = false

    /// Records a final answer at `now`.
    mutating func record(_ result: FCMSendResult, now: Date) {
        let kind: FCMAuthProblem.Kind
        let info: FCMErrorInfo
        switch result {
        case .sent:
            hasSent = true
            problem = nil
            return
        case .authError(let answer):
            info = answer
            switch answer.errorCode {
            case "THIRD_PARTY_AUTH_ERROR"?: kind = .thirdPartyAuthError
            case "SENDER_ID_MISMATCH"?: kind = .senderIDMismatch
            default: kind = .permissionDenied
            }
        case .configuration(let answer):
            info = answer
            kind = .projectNotFound
        default:
            return
        }
        if var current = problem, current.kind == kind {
            current.count += 1
            current.detail = info.description
            problem = current
        } else {
            problem = FCMAuthProblem(kind: kind, detail: info.description, since: now, count: 1)
        }
    }
}
