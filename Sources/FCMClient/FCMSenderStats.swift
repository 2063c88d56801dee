import HTTPClient

/// Counters for metrics; a snapshot.
package struct FCMSenderStats: Sendable, Equatable, SenderGauges {
    /// Requests accepted into the window and not yet final (in transfer, fetching a token, or waiting for a retry).
    package var requestsInFlight = 0
    /// `submit` calls suspended because the window is full.
    package var waitingForWindow = 0
    /// Transfers attached to curl right now (`messages:send` and token requests).
    package var transfersInFlight = 0
    /// TCP/TLS connections opened so far.
    package var connectionsOpened = 0
    /// Access tokens fetched successfully.
    package var tokenFetches = 0
    /// Seconds since the access token in use was fetched; nil before the first.
    package var accessTokenAge: Double?
    /// Seconds until the access token in use expires (negative once it has); nil before the first.
    package var accessTokenExpiresIn: Double?
    /// `401 UNAUTHENTICATED` answers (each followed by one refresh and re-send).
    package var accessTokenRejections = 0
    /// Sends beyond each request's first.
    package var retries = 0
    /// Final answers by HTTP status.
    package var responsesByStatus: [Int: Int] = [:]
    /// Final `.sent` results.
    package var sent = 0
    /// Final `.invalidToken` and `.senderMismatch` results (the device is to be marked invalid).
    package var invalidTokens = 0
    /// Requests that ended without an answer after retries.
    package var transportFailures = 0
    /// Requests that ended without an access token.
    package var accessTokenFailures = 0
    /// Requests that ended because of shutdown.
    package var shutdownFailures = 0
    /// Ended because their publish run was cancelled while they waited for a retry (`RetryScope`).
    package var cancelled = 0
    /// Ended because their next retry would have gone out after their deadline (`RetryDeadline`).
    package var expired = 0

    package init() {}
}
