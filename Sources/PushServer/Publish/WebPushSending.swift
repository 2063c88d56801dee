import WebPush

/// What became of one Web Push message, as the sender hands it to the engine.
enum WebPushDelivery: Sendable, Equatable {
    /// The push service answered (after the sender's own retries of 429/5xx).
    case answered(WebPushOutcome)
    /// Not sent because of a local rule: the endpoint is not an allowed push service, the subscription's keys
    /// could not be used for encryption, the VAPID token could not be signed. `reason` is a bounded name
    /// (`DestinationRefused`, `EncryptionFailed`, `VAPIDSigningFailed`).
    case refused(reason: String)
    /// No answer: the connection failed after the sender's retries. `detail` is for the log only.
    case transport(detail: String)
    /// The sender shut down before an answer: the target is sent again when the publish resumes.
    case shutdown
}

/// What the publish engine needs from a Web Push sender, the Web Push counterpart of `APNsSending`: hand over one
/// message for one subscription (the sender encrypts it per RFC 8291 and signs VAPID per RFC 8292 with
/// `vapid`), hear its final result once, and stop.
///
/// Backpressure is part of the contract: `submit` suspends while the sender's in-flight window is full.
protocol WebPushSending: Sendable {
    /// Accepts one message, suspending while the sender is full. `onResult` fires exactly once, possibly before
    /// `submit` returns and from any thread: keep it short and non-blocking.
    func submit(_ message: WebPushMessage, to subscription: WebPushSubscription, vapid: VAPIDAuthorizer,
                onResult: @escaping @Sendable (WebPushDelivery) -> Void) async

    /// Stops accepting messages, lets in-flight ones finish for up to `gracePeriod` seconds, then answers every
    /// unfinished one `.shutdown`. - Returns: how many got no answer.
    func shutdown(gracePeriod: Double) async -> Int
}
