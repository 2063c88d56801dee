import Foundation
import Logging

/// How `FCMSender` connects, times out and retries. The pool defaults follow the FCM quota arithmetic (600k
/// messages a minute per project ≈ 10k/s: at ~100 ms per request that needs ~1000 streams in flight; HTTP/2
/// connections to Google reportedly carry ~100 streams each).
package struct FCMSenderConfiguration: Sendable {
    /// Where `messages:send` goes: `https://fcm.googleapis.com` unless a test stand-in replaces it.
    package var baseURL: String
    /// The project whose `messages:send` is called instead of the service account's `project_id` (an account
    /// of one Google Cloud project granted the FCM role in another); nil: the account's own. Checked by
    /// `FCMSender` like `project_id` (lower-case letters, digits, `-`, `.`, `:`).
    package var projectID: String?
    /// A CA bundle (PEM) to trust instead of the system's (the test stand-in's CA); nil: the system's.
    package var caFile: String?
    /// HTTP/2 connections (curl multis with their own loop threads). Default 4.
    package var connections: Int
    /// Streams in flight per connection. Default 100. The sender's in-flight window is
    /// `connections × streamsPerConnection` (default 400), retries and their delays included.
    package var streamsPerConnection: Int
    /// One request, queueing for a stream included, seconds. Default 30.
    package var requestTimeout: Double
    /// TCP + TLS connect bound, seconds. Default 10.
    package var connectTimeout: Double
    /// What is retried and how often.
    package var retryPolicy: FCMRetryPolicy
    /// When the access token is refreshed and how fetch failures back off.
    package var tokenPolicy: AccessTokenPolicy
    /// The wall clock for the assertion's `iat` (Google compares it with its own); tests may inject one.
    package var clock: @Sendable () -> Date
    /// Where the sender logs (token refusals, transport failures). Tokens are masked, access tokens never logged.
    package var logger: Logger

    package init(
        baseURL: String = "https://fcm.googleapis.com", projectID: String? = nil, caFile: String? = nil,
        connections: Int = 4,
        streamsPerConnection: Int = 100, requestTimeout: Double = 30, connectTimeout: Double = 10,
        retryPolicy: FCMRetryPolicy = FCMRetryPolicy(), tokenPolicy: AccessTokenPolicy = AccessTokenPolicy(),
        clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger = .disabled
    ) {
        self.baseURL = baseURL
        self.projectID = projectID
        self.caFile = caFile
        self.connections = max(1, connections)
        self.streamsPerConnection = max(1, streamsPerConnection)
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.retryPolicy = retryPolicy
        self.tokenPolicy = tokenPolicy
        self.clock = clock
        self.logger = logger
    }
}
