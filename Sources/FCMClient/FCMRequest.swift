import HTTPClient

/// One FCM message for one device: the publish's message (shared by every device) and the device's token.
public struct FCMRequest: Sendable, Equatable {
    /// The registration token the device reported (opaque; JSON-escaped into the body).
    public var token: String
    public var message: FCMMessageTemplate

    public init(token: String, message: FCMMessageTemplate) {
        self.token = token
        self.message = message
    }
}

/// Why a request got no answer from FCM worth classifying.
public enum FCMFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// No HTTP answer after the retries (connection, TLS, timeout): the last transport error.
    case transport(HTTPPostError, attempts: Int)
    /// No access token to send with: the token endpoint refused the account (a configuration error, at once;
    /// `/ready` reports it through `FCMSender.authProblem`) or stayed unreachable through the retries.
    case accessToken(AccessTokenError)
    /// The sender was shut down before the final answer.
    case shutdown

    public var description: String {
        switch self {
        case .transport(let error, let attempts): return "no answer after \(attempts) attempt(s): \(error)"
        case .accessToken(let error): return "no access token: \(error)"
        case .shutdown: return "shut down"
        }
    }
}

/// The final result of one `FCMRequest`, retries included.
public enum FCMResult: Sendable, Equatable {
    /// FCM's final answer, classified (`.sent`, `.invalidToken`, `.retry` once the retries are used up, …), and
    /// how many sends it took.
    case response(FCMSendResult, attempts: Int)
    case failure(FCMFailure)
}
