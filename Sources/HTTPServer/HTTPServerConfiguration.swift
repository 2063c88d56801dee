import Glibc

/// Byte limits and timeouts. The defaults suit an API server whose requests are small JSON documents.
public struct HTTPLimits: Sendable {
    /// Longest request line (method, target, version) in bytes; longer gets 414. Default 8 KiB.
    public var maxRequestLineBytes: Int = 8 * 1024
    /// Total bytes of the header section (and separately of chunked trailers); more gets 431. Default 32 KiB.
    public var maxHeaderBytes: Int = 32 * 1024
    /// Most header fields per request; more gets 431. Default 100.
    public var maxHeaderCount: Int = 100
    /// Largest request body unless a route sets its own `BodyLimit`; larger gets 413 without reading it.
    /// Default 1 MiB.
    public var maxBodyBytes: Int = 1024 * 1024
    /// Most simultaneously open connections across all loops; further ones are accepted and closed at once.
    /// Default 10,000 (the process also needs `RLIMIT_NOFILE` above this).
    public var maxConnections: Int = 10_000
    /// Time allowed from a request's first byte (or from accept) to the end of its header section. It is a
    /// deadline, not an inactivity timer, so trickling bytes does not extend it. Default 10 s.
    public var headerReadTimeout: Duration = .seconds(10)
    /// Time allowed from the end of the headers to the end of the body. Default 30 s.
    public var bodyReadTimeout: Duration = .seconds(30)
    /// How long a keep-alive connection may sit idle between requests. Default 60 s.
    public var idleTimeout: Duration = .seconds(60)
    /// Time allowed to write one response once the socket stops accepting bytes. Default 30 s.
    public var writeTimeout: Duration = .seconds(30)
    /// Time allowed for a TLS handshake. Default 10 s.
    public var tlsHandshakeTimeout: Duration = .seconds(10)
    /// Requests served on one connection before it is closed (`Connection: close`); nil is unlimited (default).
    public var maxRequestsPerConnection: Int? = nil
    /// How long `shutdown()` lets in-flight requests finish before closing their connections. Default 10 s.
    public var shutdownGracePeriod: Duration = .seconds(10)

    public init() {}

    var parserLimits: RequestParser.Limits {
        RequestParser.Limits(maxRequestLineBytes: maxRequestLineBytes, maxHeaderBytes: maxHeaderBytes,
                             maxHeaderCount: maxHeaderCount)
    }
}

/// PEM files for the TLS listener. TLS 1.2 is the minimum and ALPN selects `http/1.1` (never h2).
public struct TLSConfiguration: Sendable {
    public var certificateChainPath: String
    public var privateKeyPath: String

    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }
}

/// Everything the server needs to start.
public struct HTTPServerConfiguration: Sendable {
    /// IPv4 address to bind. Default `127.0.0.1` (loopback only).
    public var host: String = "127.0.0.1"
    /// TCP port; 0 picks an ephemeral port (returned by `start()`). Default 8080.
    public var port: Int = 8080
    /// When set, the listener speaks HTTPS only.
    public var tls: TLSConfiguration? = nil
    /// Event-loop threads, each with its own `SO_REUSEPORT` listener. Default: the number of active cores.
    public var eventLoopCount: Int = ProcessInfoCores.active
    public var limits = HTTPLimits()
    /// Sent as the `Server` header when set. Default nil (no header).
    public var serverName: String? = nil

    public init(host: String = "127.0.0.1", port: Int = 8080, tls: TLSConfiguration? = nil,
                eventLoopCount: Int? = nil, limits: HTTPLimits = HTTPLimits(), serverName: String? = nil) {
        self.host = host
        self.port = port
        self.tls = tls
        self.eventLoopCount = max(1, eventLoopCount ?? ProcessInfoCores.active)
        self.limits = limits
        self.serverName = serverName
    }
}

enum ProcessInfoCores {
    static var active: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}

/// One completed request, for access logs and metrics.
public struct AccessLogRecord: Sendable {
    public var method: String
    /// The matched route pattern, or `-` when no route matched (404, protocol errors): never the raw URI, so it
    /// is safe as a metric label.
    public var route: String
    public var status: Int
    public var bytesIn: Int
    public var bytesOut: Int
    /// From the first byte of the request to the response being fully written.
    public var duration: Duration
    public var requestID: String
    public var peer: String
    public var isTLS: Bool
}
