import HTTPClient

/// One FCM message for one device: the publish's message (shared by every device) and the device's token.
package struct FCMRequest: Sendable, Equatable {
    /// The registration token the device reported (opaque; JSON-escaped into the body).
    package var token: String
    package var message: FCMMessageTemplate
    /// No retry is scheduled past this (the publish's `expiresAt`, the message's `time_to_live`): one that would
    /// go out later ends `.expired` at once.
    package var deadline: RetryDeadline
    /// The run the message belongs to: cancelling it ends a waiting retry at once (`.cancelled`).
    package var retries: RetryScope?

    package init(
        token: String, message: FCMMessageTemplate, deadline: RetryDeadline = .none, retries: RetryScope? = nil
    ) {
        self.token = token
        self.message = message
        self.deadline = deadline
        self.retries = retries
    }
}

/// Why a request got no answer from FCM worth classifying.
package enum FCMFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// No HTTP answer after the retries (connection, TLS, timeout): the last transport error.
    case transport(HTTPExchangeError, attempts: Int)
    /// No access token to send with: the token endpoint refused the account (a configuration error, at once;
    /// `/ready` reports it through `FCMSender.authProblem`) or stayed unreachable through the retries.
    case accessToken(AccessTokenError)
    /// The sender was shut down before the final answer.
    case shutdown
    /// The message's run was cancelled (`RetryScope.cancel`) while it waited for a retry, or before it was sent.
    case cancelled(attempts: Int)
    /// The next retry would have gone out after the message's deadline (`FCMRequest.deadline`): not scheduled.
    case expired(attempts: Int)

    package var description: String {
        switch self {
        case .cancelled(let attempts): return "cancelled after \(attempts) attempt(s)"
        case .expired(let attempts): return "expired after \(attempts) attempt(s): the next retry would come too late"
        case .transport(let error, let attempts): return "no answer after \(attempts) attempt(s): \(error)"
        case .accessToken(let error): return "no access token: \(error)"
        case .shutdown: return "shut down"
        }
    }
}

/// The final result of one `FCMRequest`, retries included.
package enum FCMResult: Sendable, Equatable {
    /// FCM's final answer, classified (`.sent`, `.invalidToken`, `.retry` once the retries are used up, …), and
    /// how many sends it took.
    case response(FCMSendResult, attempts: Int)
    case failure(FCMFailure)
}
