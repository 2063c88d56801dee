import Foundation
import Logging

/// How the client connects, times out and retries. Defaults are sized from measurements (see
/// bench/apns/RESULTS-client.md): libcurl costs ~40–55 µs CPU per transfer and slows down with many handles per
/// multi, so the window is spread over several connections of moderate depth.
package struct APNsClientConfiguration: Sendable {
    /// HTTP/2 connections per (team, key, environment); each has its own curl multi and thread. Default 6.
    package var connectionsPerPool: Int
    /// Streams in flight per connection (also `CURLMOPT_MAX_CONCURRENT_STREAMS`); the server's own
    /// `MAX_CONCURRENT_STREAMS` still applies. Default 200. The in-flight window of a pool is
    /// `connectionsPerPool × streamsPerConnection` (default 1200: by Little's law ~24k notifications/s at 50 ms
    /// round trip, ~12k/s at 100 ms).
    package var streamsPerConnection: Int
    /// A request (queueing on the connection included) that gets no response in this many seconds fails as a
    /// timeout, so a lost response cannot wedge the pool. Default 30.
    package var requestTimeout: Double
    /// TCP + TLS connect bound, seconds. Default 10.
    package var connectTimeout: Double
    /// An idle connection older than this (seconds) is replaced rather than reused; TCP keepalive probes run
    /// meanwhile. Default 900 (libcurl's own default, 118 s, would reconnect every two idle minutes).
    package var maxIdleSeconds: Int
    /// What is retried and how often.
    package var retryPolicy: APNsRetryPolicy
    /// Provider-token refresh ages.
    package var tokenPolicy: ProviderTokenPolicy
    /// Where signed provider tokens are shared with restarted processes and other nodes (see
    /// `ProviderTokenStore`). Default nil: tokens live in memory only, and a restart signs a new one.
    package var tokenStore: (any ProviderTokenStore)?
    /// The wall clock for token `iat`s; tests inject a movable one.
    package var clock: @Sendable () -> Date
    /// The process's provider-token managers, one per (team, key), to share with an `APNsBroadcastClient` (and
    /// other clients) so the process holds one token per key. When set, it replaces `tokenPolicy`, `tokenStore`
    /// and `clock` for tokens (it was created with its own). Default nil: the client creates one from those three.
    package var tokenManagers: ProviderTokenManagers?
    /// Where the client logs (connection events, configuration faults). Tokens are masked, JWTs never logged.
    package var logger: Logger

    package init(
        connectionsPerPool: Int = 6, streamsPerConnection: Int = 200, requestTimeout: Double = 30,
        connectTimeout: Double = 10, maxIdleSeconds: Int = 900, retryPolicy: APNsRetryPolicy = APNsRetryPolicy(),
        tokenPolicy: ProviderTokenPolicy = ProviderTokenPolicy(), tokenStore: (any ProviderTokenStore)? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }, tokenManagers: ProviderTokenManagers? = nil,
        logger: Logger = .disabled
    ) {
        precondition(connectionsPerPool >= 1 && streamsPerConnection >= 1)
        self.connectionsPerPool = connectionsPerPool
        self.streamsPerConnection = streamsPerConnection
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.maxIdleSeconds = maxIdleSeconds
        self.retryPolicy = retryPolicy
        self.tokenPolicy = tokenPolicy
        self.tokenStore = tokenStore
        self.clock = clock
        self.tokenManagers = tokenManagers
        self.logger = logger
    }
}
