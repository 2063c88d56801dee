/// How an `HTTPExchangeClient` connects. Every limit is explicit; its users (FCM, Web Push, APNs broadcast calls,
/// webhooks) set their own defaults.
package struct HTTPExchangeConfiguration: Sendable, Equatable {
    /// Names the loop threads (`<name>-0`, `<name>-1`, …).
    package var name: String
    /// Curl multis, each on its own `CurlMultiLoop` thread: the connection pool. Exchanges go to the least loaded.
    package var connections: Int
    /// Connections one multi may open to one host (`CURLMOPT_MAX_HOST_CONNECTIONS`): 1 for an HTTP/2 service,
    /// where streams multiplex on it; more for HTTP/1.1 push services, one request per connection at a time.
    package var maxConnectionsPerHost: Int
    /// Streams one HTTP/2 connection carries at once (`CURLMOPT_MAX_CONCURRENT_STREAMS`); the server's own
    /// `MAX_CONCURRENT_STREAMS` still applies.
    package var streamsPerConnection: Int
    /// Ask for HTTP/2 over TLS (ALPN), falling back to HTTP/1.1 when the server does not offer it.
    package var http2: Bool
    /// Only `https` URLs (never plain http).
    package var httpsOnly: Bool
    /// A CA bundle (PEM) to trust instead of the system's: the test stand-ins' throw-away CA.
    package var caFile: String?
    /// Judges the address of every socket curl opens, after DNS resolution (so no DNS-rebinding window between
    /// check and use); nil: none (the URL is the operator's own configuration, such as FCM's base URL). Webhooks,
    /// whose URLs come from API callers, always have one.
    package var policy: DestinationPolicy?
    /// One exchange, from DNS lookup to the last response byte (queueing for a stream included).
    package var timeout: Duration
    /// DNS lookup plus TCP and TLS connect.
    package var connectTimeout: Duration
    /// Response headers plus body; a larger answer aborts the exchange (`responseTooLarge`).
    package var maxResponseBytes: Int
    /// An idle connection older than this is replaced rather than reused.
    package var maxIdleSeconds: Int
    /// Idle connections each multi keeps for reuse (`CURLMOPT_MAXCONNECTS`); nil: curl's default (four times the
    /// transfers it has run at once). Webhooks, which reach many hosts, bound it.
    package var maxIdleConnections: Int?

    package init(
        name: String, connections: Int = 2, maxConnectionsPerHost: Int = 1, streamsPerConnection: Int = 100,
        http2: Bool = true, httpsOnly: Bool = true, caFile: String? = nil, policy: DestinationPolicy? = nil,
        timeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10), maxResponseBytes: Int = 64 * 1024,
        maxIdleSeconds: Int = 900, maxIdleConnections: Int? = nil
    ) {
        self.name = name
        self.connections = max(1, connections)
        self.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
        self.streamsPerConnection = max(1, streamsPerConnection)
        self.http2 = http2
        self.httpsOnly = httpsOnly
        self.caFile = caFile
        self.policy = policy
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.maxResponseBytes = max(0, maxResponseBytes)
        self.maxIdleSeconds = max(1, maxIdleSeconds)
        self.maxIdleConnections = maxIdleConnections.map { max(1, $0) }
    }
}

extension Duration {
    /// Whole milliseconds (rounded up, at least 1), for curl's `*_MS` options; saturates instead of trapping.
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 1 }
        guard seconds < Int64(Int32.max) / 1000 else { return Int(Int32.max) }
        let total = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(max(1, total))
    }
}

extension HTTPExchangeConfiguration {
    /// Webhooks: POSTs to URLs API callers chose, so a `DestinationPolicy` is checked on every socket, plain http is
    /// allowed (many receivers are), and each limit is the operator's (docs/OPERATIONS.md, `webhooks.*`). One loop
    /// thread (`webhooks-0`) runs every transfer side by side; connections to a host are bounded only by what the
    /// outbox runs at once (`maxConnectionsPerHost`, its concurrency); HTTP/2 is used where TLS offers it, as
    /// curl does by default; an idle connection is kept up to 118 s (curl's default) and at most 16 of them.
    package static func webhooks(
        policy: DestinationPolicy, timeout: Duration = .seconds(3),
        connectTimeout: Duration = .seconds(2), maxResponseBytes: Int = 64 * 1024,
        maxConnectionsPerHost: Int = 16
    ) -> HTTPExchangeConfiguration {
        HTTPExchangeConfiguration(
            name: "webhooks", connections: 1, maxConnectionsPerHost: maxConnectionsPerHost,
            http2: true, httpsOnly: false, policy: policy, timeout: timeout,
            connectTimeout: connectTimeout, maxResponseBytes: maxResponseBytes,
            maxIdleSeconds: 118, maxIdleConnections: 16)
    }
}
