import HTTPClient

/// Counters for metrics; a snapshot.
public struct FCMSenderStats: Sendable, Equatable, SenderGauges {
    /// Requests accepted into the window and not yet final (in transfer, fetching a token, or waiting for a retry).
    public var requestsInFlight = 0
    /// `submit` calls suspended because the window is full.
    public var waitingForWindow = 0
    /// Transfers attached to curl right now (`messages:send` and token requests).
    public var transfersInFlight = 0
    /// TCP/TLS connections opened so far.
    public var connectionsOpened = 0
    /// Access tokens fetched successfully.
    public var tokenFetches = 0
    /// Seconds since the access token in use was fetched; nil before the first.
    public var accessTokenAge: Double?
    /// Seconds until the access token in use expires (negative once it has); nil before the first.
    public var accessTokenExpiresIn: Double?
    /// `401 UNAUTHENTICATED` answers (each followed by one refresh and re-send).
    public var accessTokenRejections = 0
    /// Sends beyond each request's first.
    public var retries = 0
    /// Final answers by HTTP status.
    public var responsesByStatus: [Int: Int] = [:]
    /// Final `.sent` results.
    public var sent = 0
    /// Final `.invalidToken` and `.senderMismatch` results (the device is to be marked invalid).
    public var invalidTokens = 0
    /// Requests that ended without an answer after retries.
    public var transportFailures = 0
    /// Requests that ended without an access token.
    public var accessTokenFailures = 0
    /// Requests that ended because of shutdown.
    public var shutdownFailures = 0
    /// Ended because their publish run was cancelled while they waited for a retry (`RetryScope`).
    public var cancelled = 0
    /// Ended because their next retry would have gone out after their deadline (`RetryDeadline`).
    public var expired = 0

    public init() {}
}
