/// Counters for metrics; a snapshot taken under the pools' locks.
public struct APNsClientStats: Sendable, Equatable {
    /// Requests accepted into a window and not yet final (in transfer or waiting for a retry).
    public var requestsInFlight = 0
    /// Transfers attached to curl right now (HTTP/2 streams open or about to open).
    public var streamsInFlight = 0
    /// `submit` calls suspended because their pool's window is full.
    public var waitingForWindow = 0
    /// Pools, one per (team, key, environment).
    public var pools = 0
    /// Connection slots (curl multis and threads) across pools.
    public var connections = 0
    /// TCP/TLS connections opened so far (reconnects after GOAWAY or idle included).
    public var connectionsOpened = 0
    /// Provider tokens minted for the keys of the client's pools, once per key (by whichever pool or client sharing
    /// the key's `ProviderTokenManager` minted them).
    public var tokenRefreshes = 0
    /// Provider tokens taken over from the `ProviderTokenStore` (signed by an earlier process or another node),
    /// counted like `tokenRefreshes`.
    public var tokensAdopted = 0
    /// `429 TooManyProviderTokenUpdates` answers (each is retried, not final).
    public var tokenUpdateRejections = 0
    /// Attempts beyond each request's first.
    public var retries = 0
    /// Final responses by HTTP status.
    public var responsesByStatus: [Int: Int] = [:]
    /// Requests that ended in a transport failure after retries.
    public var transportFailures = 0
    /// Requests that ended in a configuration fault.
    public var configurationFailures = 0
    /// Requests rejected locally by the header rules.
    public var invalidRequests = 0
    /// Requests that ended because of shutdown.
    public var shutdownFailures = 0

    public init() {}

    mutating func add(_ other: APNsClientStats) {
        requestsInFlight += other.requestsInFlight
        streamsInFlight += other.streamsInFlight
        waitingForWindow += other.waitingForWindow
        pools += other.pools
        connections += other.connections
        connectionsOpened += other.connectionsOpened
        tokenRefreshes += other.tokenRefreshes
        tokensAdopted += other.tokensAdopted
        tokenUpdateRejections += other.tokenUpdateRejections
        retries += other.retries
        responsesByStatus.merge(other.responsesByStatus, uniquingKeysWith: +)
        transportFailures += other.transportFailures
        configurationFailures += other.configurationFailures
        invalidRequests += other.invalidRequests
        shutdownFailures += other.shutdownFailures
    }
}
