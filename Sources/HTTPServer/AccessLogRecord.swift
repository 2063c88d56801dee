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

    public init(
        method: String, route: String, status: Int, bytesIn: Int, bytesOut: Int, duration: Duration,
        requestID: String, peer: String, isTLS: Bool
    ) {
        self.method = method
        self.route = route
        self.status = status
        self.bytesIn = bytesIn
        self.bytesOut = bytesOut
        self.duration = duration
        self.requestID = requestID
        self.peer = peer
        self.isTLS = isTLS
    }
}
