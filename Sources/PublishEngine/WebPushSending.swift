import WebPush

/// What the publish engine needs from a Web Push sender, shaped like `APNsSending` and `FCMSending`: hand over one
/// message for one subscription (the sender encrypts it per RFC 8291 and signs VAPID per RFC 8292), hear its final
/// result once, and stop. `WebPushSender` is the real one; the engine's unit tests script a fake.
///
/// Backpressure is part of the contract: `submit` suspends while the sender's in-flight window is full. Each
/// instance's FCM and Web Push senders have their own windows, so a slow platform paces only its own deliveries.
package protocol WebPushSending: Sendable {
    /// Accepts one notification, suspending while the sender is full. `onResult` fires exactly once, possibly
    /// before `submit` returns and from any thread: keep it short and non-blocking.
    func submit(_ notification: WebPushNotification, onResult: @escaping @Sendable (WebPushResult) -> Void) async

    /// Stops accepting notifications, lets in-flight ones finish for up to `gracePeriod`, then answers
    /// every unfinished one `.failure(.shutdown)`. - Returns: the notifications that got no answer.
    func shutdown(gracePeriod: Duration) async -> [WebPushNotification]

    /// Counters and gauges for `/metrics` and `/ready`.
    func stats() -> WebPushSenderStats

    /// Push services refusing the VAPID credentials (see `WebPushSender.credentialProblems`).
    var credentialProblems: [WebPushCredentialProblem] { get }
}

extension WebPushSending {
    /// A scripted sender has no counters.
    func stats() -> WebPushSenderStats { WebPushSenderStats() }
    /// A scripted sender has no credentials to refuse.
    var credentialProblems: [WebPushCredentialProblem] { [] }
}

extension WebPushSender: WebPushSending {}
