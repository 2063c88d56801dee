import Logging

/// The final outcome of one request, after any retries.
package enum APNsResult: Sendable, Equatable, CustomStringConvertible {
    /// APNs answered: 200, or an error about this notification or device (400, 410, …). Responses that indict
    /// the credentials instead arrive as `.failure(.configuration)`.
    case response(APNsResponse)
    /// No usable answer.
    case failure(APNsFailure)

    /// The response, if APNs answered.
    package var response: APNsResponse? {
        if case .response(let response) = self { return response }
        return nil
    }

    package var description: String {
        switch self {
        case .response(let r):
            var text = "status=\(r.status) attempts=\(r.attempts)"
            if let id = r.apnsID { text += " apns-id=\(id)" }
            if let id = r.apnsUniqueID { text += " apns-unique-id=\(id)" }
            if let reason = r.reason { text += " reason=\(reason.rawValue)" }
            if let t = r.timestamp {
                text += " timestamp=\(Int64(saturating: (t.timeIntervalSince1970 * 1000).rounded()))"
            }
            return text
        case .failure(let failure):
            return "failure=\(failure)"
        }
    }
}

/// Why a request got no usable answer from APNs.
package enum APNsFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// A header rule was broken; nothing was sent.
    case invalidRequest(APNsViolation)
    /// The transfer kept failing (connection loss, timeout, TLS) until the retry policy gave up.
    case transport(APNsTransportError, attempts: Int)
    /// The credentials are unusable (rejected token or key, refresh rate exceeded, signing failed). Every request
    /// with these credentials will fail the same way; fix the configuration rather than the device.
    case configuration(APNsConfigurationFault)
    /// The client was shut down before the request finished.
    case shutdown
    /// The request's run was cancelled (`APNsRequest.retries`) while it waited for a retry.
    case cancelled(attempts: Int)
    /// The next retry would have gone out after `APNsRequest.retryDeadline`: not scheduled.
    case expired(attempts: Int)

    package var description: String {
        switch self {
        case .invalidRequest(let violation): return "invalid_request(\(violation))"
        case .transport(let error, let attempts): return "transport(\(error), attempts: \(attempts))"
        case .configuration(let fault): return "configuration(\(fault))"
        case .shutdown: return "shutdown"
        case .cancelled(let attempts): return "cancelled(attempts: \(attempts))"
        case .expired(let attempts): return "expired(attempts: \(attempts))"
        }
    }
}

/// A credentials problem, reported instead of retried.
package enum APNsConfigurationFault: Sendable, Hashable, CustomStringConvertible {
    /// APNs rejected the credentials (`InvalidProviderToken`, `TooManyProviderTokenUpdates`,
    /// `BadEnvironmentKeyIdInToken`, …).
    case rejected(status: Int, reason: APNsReason)
    /// `ExpiredProviderToken` for a token younger than the 20-minute refresh floor (clock skew?): a new token would
    /// risk `TooManyProviderTokenUpdates`, so none is minted.
    case expiredTokenBeforeRefreshFloor(ageSeconds: Int)
    /// The key could not sign a provider token.
    case signingFailed(String)

    package var description: String {
        switch self {
        case .rejected(let status, let reason): return "rejected status=\(status) reason=\(reason.rawValue)"
        case .expiredTokenBeforeRefreshFloor(let age): return "expired_token_before_refresh_floor age=\(age)s"
        case .signingFailed(let message): return "signing_failed: \(message)"
        }
    }
}

/// A transfer that ended without an HTTP response, curl-free.
package struct APNsTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure, which decides retries.
    package enum Kind: String, Sendable, Hashable {
        /// The connection failed or went away (GOAWAY, reset, refused, HTTP/2 framing): nothing was answered,
        /// re-sending is safe.
        case connection
        /// No answer within the request timeout.
        case timeout
        /// Anything else (TLS verification, bad URL): retrying will not help.
        case fatal
    }

    package var kind: Kind
    /// The transport's own code (a `CURLcode`).
    package var code: Int
    /// The transport's message.
    package var message: String

    package init(kind: Kind, code: Int, message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    package var description: String { "\(kind.rawValue) code=\(code) \(message)" }
}
