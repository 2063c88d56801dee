/// What FCM said about one error, as far as the server needs it (FCM v1's `google.rpc.Status` error body).
package struct FCMErrorInfo: Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status.
    package var httpStatus: Int
    /// The canonical status (`error.status`), e.g. `NOT_FOUND`, `UNAUTHENTICATED`.
    package var status: String?
    /// The FCM code from the `google.firebase.fcm.v1.FcmError` detail, e.g. `UNREGISTERED`.
    package var errorCode: String?
    /// `error.message`, at most 512 bytes; FCM's messages never contain the token.
    package var message: String

    package init(httpStatus: Int, status: String?, errorCode: String?, message: String) {
        self.httpStatus = httpStatus
        self.status = status
        self.errorCode = errorCode
        self.message = message
    }

    package var description: String {
        "\(httpStatus) \(errorCode ?? status ?? "no status")\(message.isEmpty ? "" : ": \(message)")"
    }
}

/// The outcome of one `messages:send`, per FCM v1's error table (Firebase reference "ErrorCode" and
/// "FCM error codes"). What to do with each is in its comment.
package enum FCMSendResult: Sendable, Equatable {
    /// 200: accepted; `name` is `projects/{project}/messages/{id}`.
    case sent(name: String)
    /// `UNREGISTERED` (404), `NOT_FOUND` naming the token, or `INVALID_ARGUMENT` about the token: the token is
    /// dead or never was one. Mark the device invalid (as for APNs 410); never retry.
    case invalidToken(FCMErrorInfo)
    /// `SENDER_ID_MISMATCH` (403): the token belongs to another Firebase project. Invalid for this project (mark
    /// the device invalid); many at once mean the configured project is wrong.
    case senderMismatch(FCMErrorInfo)
    /// `QUOTA_EXCEEDED` (429), `UNAVAILABLE` (503), `INTERNAL` (500): retry. FCM's error-code reference asks
    /// senders to honour `Retry-After` on these answers (then `retryAfter` seconds), else to back off
    /// exponentially, from at least a minute after `QUOTA_EXCEEDED` (`FCMRetryPolicy`).
    case retry(FCMErrorInfo, retryAfter: Double?)
    /// `401 UNAUTHENTICATED` without an FCM code: the access token is missing or expired. Refresh it once
    /// (`AccessTokenState.rejected`) and re-send.
    case accessTokenRejected(FCMErrorInfo)
    /// `PERMISSION_DENIED` (403) or `THIRD_PARTY_AUTH_ERROR` (401): the service account may not send, or a
    /// credential in Firebase is wrong. A configuration error for `/ready`; keep the device.
    case authError(FCMErrorInfo)
    /// `INVALID_ARGUMENT` about the message (unknown field, bad value, too big): fail this publish's FCM part,
    /// keep the device, do not retry.
    case invalidMessage(FCMErrorInfo)
    /// `404` without an FCM code: the project id or URL is wrong. A configuration error; keep the device.
    case configuration(FCMErrorInfo)
    /// Anything else (an unexpected status or body): a short description. Not retried; the device is kept.
    case unknown(String)
}
