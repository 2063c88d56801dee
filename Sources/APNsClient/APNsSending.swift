/// What the publish engine needs from an APNs sender, and nothing more: hand over one notification and hear its
/// final result once, and stop. `APNsClient` is the real one; the engine's unit tests script a fake.
///
/// Backpressure is part of the contract: `submit` suspends while the sender cannot take another request (the
/// client's in-flight window is full), which is what paces a publish's fan-out.
package protocol APNsSending: Sendable {
    /// Accepts `request`, suspending while the sender is full; returns once it is accepted. `onResult` fires
    /// exactly once with the final result (retries included), possibly before `submit` returns, and from any
    /// thread: keep it short and non-blocking.
    func submit(
        _ request: APNsRequest, credentials: APNsCredentials, environment: APNsEnvironment,
        onResult: @escaping @Sendable (APNsResult) -> Void
    ) async

    /// Stops accepting requests, lets in-flight ones finish for up to `gracePeriod`, then gives every
    /// unfinished one `.failure(.shutdown)` through its callback. - Returns: the requests that got no answer.
    func shutdown(gracePeriod: Duration) async -> [APNsRequest]
}

extension APNsClient: APNsSending {}
