import Foundation

/// One accepted request on its way through a pool: the prepared headers, the caller's callback and retry state.
///
/// @unchecked Sendable: a job is owned by exactly one thread at a time. The submitting task creates it and hands
/// it over through a connection's locked inbox (or a pool's locked waiter list); from then on only that
/// connection's loop thread reads or writes it.
final class APNsJob: @unchecked Sendable {
    let request: APNsRequest
    let prepared: APNsPreparedRequest
    let onResult: @Sendable (APNsResult) -> Void
    /// Attempts sent so far.
    var attempts = 0
    /// Monotonic nanoseconds of the first send; 0 before it.
    var firstSentAt: UInt64 = 0
    /// Whether the one `ExpiredProviderToken` retry was used.
    var tokenRefreshed = false
    /// `TooManyProviderTokenUpdates` answers so far (not counted against the retry policy's attempts).
    var tokenUpdateRejections = 0
    /// The token generation of the attempt in flight.
    var tokenGeneration = 0
    /// A token to use for the next attempt instead of the manager's current one (after an expiry refresh).
    var overrideToken: ProviderTokenState.Token?
    /// What a task found out about tokens for this job (the manager may have called the store): set while the job
    /// is away from its connection thread, read by it when the job comes back (`APNsConnectionDriver.prepare`).
    var tokenAnswer: TokenAnswer?
    /// Not-before time for a delayed retry, monotonic nanoseconds.
    var notBefore: UInt64 = 0
    /// `request.retryDeadline` on the monotonic clock: no retry is scheduled past it. Nil: none.
    let deadline: UInt64?

    /// - Parameter deadline: `request.retryDeadline` as monotonic nanoseconds (`APNsJob.monotonic`).
    init(
        request: APNsRequest, prepared: APNsPreparedRequest, deadline: UInt64? = nil,
        onResult: @escaping @Sendable (APNsResult) -> Void
    ) {
        self.request = request
        self.prepared = prepared
        self.deadline = deadline
        self.onResult = onResult
    }

    /// A token the connection thread asked a task for, as the task answered.
    enum TokenAnswer {
        /// For a first attempt (`ProviderTokenManager.currentToken`).
        case current(Result<ProviderTokenState.Token, APNsFailure>)
        /// After `ExpiredProviderToken` (`tokenAfterExpiry`).
        case refreshed(Result<ProviderTokenState.Token, APNsFailure>)
        /// After `TooManyProviderTokenUpdates` (`tokenAfterUpdateRejected`).
        case rejectedResolved(Result<ProviderTokenManager.UpdateRejectedOutcome, APNsFailure>)
    }

    /// A wall-clock deadline as monotonic nanoseconds, given both clocks read now.
    static func monotonic(_ deadline: Date?, wallNow: Date, monotonicNow: UInt64) -> UInt64? {
        guard let deadline else { return nil }
        let seconds = deadline.timeIntervalSince(wallNow)
        guard seconds > 0 else { return monotonicNow }
        return monotonicNow &+ UInt64(min(seconds, 1e9) * 1e9)
    }
}
