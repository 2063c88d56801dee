import FCMClient

/// The FCM project an instance sends to: its service account (whose access token the sender obtains and caches)
/// and the project id of `projects/{id}/messages:send`.
struct FCMAccount: Sendable {
    let serviceAccount: ServiceAccount
    let projectID: String
}

/// What became of one FCM message, as the sender hands it to the engine.
enum FCMDelivery: Sendable, Equatable {
    /// FCM answered (after the sender's own retries of `QUOTA_EXCEEDED`/`UNAVAILABLE`/`INTERNAL` and one access
    /// token refresh).
    case answered(FCMSendResult)
    /// No answer: the connection failed after the sender's retries. `detail` is for the log only.
    case transport(detail: String)
    /// No access token could be obtained (Google's token endpoint refused the service account).
    case accessTokenUnavailable(detail: String)
    /// The sender shut down before an answer: the target is sent again when the publish resumes.
    case shutdown
}

/// What the publish engine needs from an FCM sender, the FCM counterpart of `APNsSending`: hand over one
/// `messages:send` body, hear its final result once, and stop.
///
/// Backpressure is part of the contract: `submit` suspends while the sender's in-flight window is full. Each
/// platform's sender has its own window, so a slow FCM paces only FCM deliveries.
protocol FCMSending: Sendable {
    /// Accepts one message for `account`, suspending while the sender is full. `onResult` fires exactly once,
    /// possibly before `submit` returns and from any thread: keep it short and non-blocking.
    func submit(_ body: [UInt8], account: FCMAccount, onResult: @escaping @Sendable (FCMDelivery) -> Void) async

    /// Stops accepting messages, lets in-flight ones finish for up to `gracePeriod` seconds, then answers every
    /// unfinished one `.shutdown`. - Returns: how many got no answer.
    func shutdown(gracePeriod: Double) async -> Int
}
