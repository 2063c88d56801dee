import Locking
import Logging
import Synchronization

/// What every loop of one server shares: immutable configuration plus atomic counters.
final class ServerContext: Sendable {
    let router: Router
    let limits: HTTPLimits
    let logger: Logger
    let tls: TLSContext?
    let serverName: String?
    let onRequestsCompleted: (@Sendable ([AccessLogRecord]) -> Void)?
    let errorResponse: (@Sendable (any Error) -> HTTPResponse?)?
    /// Connections currently open across all loops.
    let openConnections = Atomic<Int>(0)
    /// Connections accepted since start.
    let acceptedConnections = Atomic<Int>(0)
    /// Requests answered since start.
    let completedRequests = Atomic<Int>(0)
    /// Connections and reserved body bytes per client address, shared by every loop (`AddressTable`).
    let addresses: Locked<AddressTable>
    /// `limits.connectionLimitExemptAddresses`, parsed.
    let exemptAddresses: Set<PeerAddress>

    init(
        router: Router, limits: HTTPLimits, logger: Logger, tls: TLSContext?, serverName: String?,
        onRequestsCompleted: (@Sendable ([AccessLogRecord]) -> Void)?,
        errorResponse: (@Sendable (any Error) -> HTTPResponse?)? = nil
    ) {
        self.router = router
        self.limits = limits
        self.logger = logger
        self.tls = tls
        self.serverName = serverName
        self.onRequestsCompleted = onRequestsCompleted
        self.errorResponse = errorResponse
        addresses = Locked(
            AddressTable(
                maxConnectionsPerAddress: limits.maxConnectionsPerAddress, maxBodyBytes: limits.maxBodyBytesInFlight,
                maxBodyBytesPerAddress: max(limits.maxBodyBytes, limits.maxBodyBytesInFlight / 8)))
        exemptAddresses = Set(limits.connectionLimitExemptAddresses.compactMap(PeerAddress.init))
    }

    /// The response for an error a handler threw: its own for an `HTTPResponseError`, else what `errorResponse`
    /// maps it to, else 500 (details stay in the log; the client only learns that something went wrong).
    func response(for error: any Error, from request: HTTPRequest) -> HTTPResponse {
        if let error = error as? any HTTPResponseError { return HTTPResponse(error: error) }
        if let mapped = errorResponse?(error) { return mapped }
        logger.error(
            "Handler failed",
            [
                "error": "\(error)", "route": request.routePattern,
                "request_id": request.requestID,
            ])
        return HTTPResponse(error: HTTPError.internalError)
    }
}
