/// Byte limits and timeouts. The defaults suit an API server whose requests are small JSON documents.
package struct HTTPLimits: Sendable {
    /// Longest request line (method, target, version) in bytes; longer gets 414. Default 8 KiB.
    package var maxRequestLineBytes: Int = 8 * 1024
    /// Total bytes of the header section (and separately of chunked trailers); more gets 431. Default 32 KiB.
    package var maxHeaderBytes: Int = 32 * 1024
    /// Most header fields per request; more gets 431. Default 100.
    package var maxHeaderCount: Int = 100
    /// Largest request body unless a route sets its own `BodyLimit`; larger gets 413 without reading it.
    /// Default 1 MiB.
    package var maxBodyBytes: Int = 1024 * 1024
    /// Most simultaneously open connections across all loops; further ones are accepted and closed at once.
    /// Default 10,000 (the process also needs `RLIMIT_NOFILE` above this).
    package var maxConnections: Int = 10_000
    /// Most open connections from one client address (IPv6: one /64), counted from accept (TLS handshake and
    /// waiting for the request head included); further ones are accepted and closed at once. 0 = no limit.
    /// Default 128.
    package var maxConnectionsPerAddress: Int = 128
    /// Addresses exempt from `maxConnectionsPerAddress` and from the per-address share of
    /// `maxBodyBytesInFlight` (a reverse proxy carries many clients). Text that is not an IP address is ignored.
    package var connectionLimitExemptAddresses: [String] = []
    /// Request-body bytes buffered at once across all connections: reserved when a request head arrives (the
    /// declared length, or the route's limit for a chunked body), released when its response is written. Past it
    /// a request gets `503` with `Retry-After` before its body is read. One address may hold an eighth of it.
    /// Default 64 MiB.
    package var maxBodyBytesInFlight: Int = 64 * 1024 * 1024
    /// With at least three quarters of `maxConnections` open, keep-alive connections idle this long are closed
    /// (instead of after `idleTimeout`); at the cap, a new connection closes the loop's oldest idle keep-alive
    /// connection instead of being refused. Default 5 s.
    package var idleTimeoutUnderPressure: Duration = .seconds(5)
    /// Time allowed from a request's first byte (or from accept) to the end of its header section. It is a
    /// deadline, not an inactivity timer, so trickling bytes does not extend it. Default 10 s.
    package var headerReadTimeout: Duration = .seconds(10)
    /// Time allowed from the end of the headers to the end of the body. Default 30 s.
    package var bodyReadTimeout: Duration = .seconds(30)
    /// How long a keep-alive connection may sit idle between requests. Default 60 s.
    package var idleTimeout: Duration = .seconds(60)
    /// Time allowed to write one response once the socket stops accepting bytes. Default 30 s.
    package var writeTimeout: Duration = .seconds(30)
    /// Time allowed for a TLS handshake. Default 10 s.
    package var tlsHandshakeTimeout: Duration = .seconds(10)
    /// Requests served on one connection before it is closed (`Connection: close`); nil is unlimited (default).
    package var maxRequestsPerConnection: Int? = nil
    /// How long `shutdown()` lets in-flight requests finish before closing their connections. Default 10 s.
    package var shutdownGracePeriod: Duration = .seconds(10)

    /// The documented defaults.
    package init() {}

    var parserLimits: RequestParser.Limits {
        RequestParser.Limits(
            maxRequestLineBytes: maxRequestLineBytes, maxHeaderBytes: maxHeaderBytes,
            maxHeaderCount: maxHeaderCount)
    }
}
