/// One completed request, for access logs and metrics.
package struct AccessLogRecord: Sendable {
    package var method: String
    /// The matched route pattern, or `-` when no route matched (404, protocol errors): never the raw URI, so it
    /// is safe as a metric label.
    package var route: String
    package var status: Int
    package var bytesIn: Int
    package var bytesOut: Int
    /// From the first byte of the request to the response being fully written.
    package var duration: Duration
    package var requestID: String
    package var peer: String
    package var isTLS: Bool

    package init(
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
