/// What the publish engine needs from an FCM sender, shaped like `APNsSending` (Sources/APNsClient) so the engine
/// treats platforms alike: hand over one message and hear its final result once, and stop. `FCMSender` is the
/// real one; engine unit tests may script a fake.
///
/// Backpressure is part of the contract: `submit` suspends while the sender's in-flight window is full.
package protocol FCMSending: Sendable {
    /// Accepts `request`, suspending while the sender is full; `onResult` fires exactly once with the final
    /// result (retries included), possibly before `submit` returns, from any thread: keep it short.
    func submit(_ request: FCMRequest, onResult: @escaping @Sendable (FCMResult) -> Void) async

    /// Stops accepting requests, lets in-flight ones finish for up to `gracePeriod`, then gives every
    /// unfinished one `.failure(.shutdown)`. - Returns: the requests that got no answer.
    func shutdown(gracePeriod: Duration) async -> [FCMRequest]

    /// Counters and gauges for `/metrics` and `/ready`.
    func stats() -> FCMSenderStats

    /// What keeps the credentials from working, for `/ready` and the console (see `FCMSender.authProblem`).
    var authProblem: FCMAuthProblem? { get }
}

extension FCMSending {
    /// A scripted sender has no counters.
    package func stats() -> FCMSenderStats { FCMSenderStats() }
    /// A scripted sender has no credentials to refuse.
    package var authProblem: FCMAuthProblem? { nil }
}

extension FCMSender: FCMSending {}
