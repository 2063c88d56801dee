/// Limits of the outbound POST client; every one is explicit (see docs/OPERATIONS.md, `webhooks.*`).
public struct HTTPPostConfiguration: Sendable, Equatable {
    /// Which addresses may be connected to.
    public var policy: DestinationPolicy
    /// The whole request, from DNS lookup to the last response byte.
    public var timeout: Duration
    /// DNS lookup plus TCP (and TLS) connect.
    public var connectTimeout: Duration
    /// Response headers plus body; a larger response aborts the transfer.
    public var maxResponseBytes: Int
    /// Idle connections kept for reuse (curl's connection cache of the client).
    public var maxIdleConnections: Int

    public init(policy: DestinationPolicy = DestinationPolicy(), timeout: Duration = .seconds(3),
                connectTimeout: Duration = .seconds(2), maxResponseBytes: Int = 64 * 1024, maxIdleConnections: Int = 16) {
        self.policy = policy
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.maxResponseBytes = maxResponseBytes
        self.maxIdleConnections = maxIdleConnections
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
