/// How an `HTTPExchangeClient` connects. Every limit is explicit; the senders built on it (FCM, Web Push) set
/// their own defaults.
public struct HTTPExchangeConfiguration: Sendable, Equatable {
    /// Names the loop threads (`<name>-0`, `<name>-1`, …).
    public var name: String
    /// Curl multis, each on its own `CurlMultiLoop` thread: the connection pool. Exchanges go to the least loaded.
    public var connections: Int
    /// Connections one multi may open to one host (`CURLMOPT_MAX_HOST_CONNECTIONS`): 1 for an HTTP/2 service,
    /// where streams multiplex on it; more for HTTP/1.1 push services, one request per connection at a time.
    public var maxConnectionsPerHost: Int
    /// Streams one HTTP/2 connection carries at once (`CURLMOPT_MAX_CONCURRENT_STREAMS`); the server's own
    /// `MAX_CONCURRENT_STREAMS` still applies.
    public var streamsPerConnection: Int
    /// Ask for HTTP/2 over TLS (ALPN), falling back to HTTP/1.1 when the server does not offer it.
    public var http2: Bool
    /// Only `https` URLs (never plain http).
    public var httpsOnly: Bool
    /// A CA bundle (PEM) to trust instead of the system's: the test stand-ins' throw-away CA.
    public var caFile: String?
    /// Judges every address curl is about to connect to, after DNS (see `HTTPPostClient`); nil: none (the URL is
    /// the operator's own configuration, such as FCM's base URL).
    public var policy: DestinationPolicy?
    /// One exchange, from DNS lookup to the last response byte (queueing for a stream included).
    public var timeout: Duration
    /// DNS lookup plus TCP and TLS connect.
    public var connectTimeout: Duration
    /// Response headers plus body; a larger answer aborts the exchange (`responseTooLarge`).
    public var maxResponseBytes: Int
    /// An idle connection older than this is replaced rather than reused.
    public var maxIdleSeconds: Int

    public init(name: String, connections: Int = 2, maxConnectionsPerHost: Int = 1, streamsPerConnection: Int = 100,
                http2: Bool = true, httpsOnly: Bool = true, caFile: String? = nil, policy: DestinationPolicy? = nil,
                timeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10), maxResponseBytes: Int = 64 * 1024,
                maxIdleSeconds: Int = 900) {
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
    }
}
