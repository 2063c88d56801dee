/// Counters for metrics; a snapshot taken under the pools' locks.
package struct APNsClientStats: Sendable, Equatable {
    /// Requests accepted into a window and not yet final (in transfer or waiting for a retry).
    package var requestsInFlight = 0
    /// Transfers attached to curl right now (HTTP/2 streams open or about to open).
    package var streamsInFlight = 0
    /// `submit` calls suspended because their pool's window is full.
    package var waitingForWindow = 0
    /// Pools, one per (team, key, environment).
    package var pools = 0
    /// Connection slots (curl multis and threads) across pools.
    package var connections = 0
    /// TCP/TLS connections opened so far (reconnects after GOAWAY or idle included).
    package var connectionsOpened = 0
    /// Curl easy handles made so far; each connection keeps at most its stream window of them for reuse.
    package var transfersCreated = 0
    /// Provider tokens minted for the keys of the client's pools, once per key (by whichever pool or client sharing
    /// the key's `ProviderTokenManager` minted them).
    package var tokenRefreshes = 0
    /// Provider tokens taken over from the `ProviderTokenStore` (signed by an earlier process or another node),
    /// counted like `tokenRefreshes`.
    package var tokensAdopted = 0
    /// `429 TooManyProviderTokenUpdates` answers (each is retried, not final).
    package var tokenUpdateRejections = 0
    /// Attempts beyond each request's first.
    package var retries = 0
    /// Final responses by HTTP status.
    package var responsesByStatus: [Int: Int] = [:]
    /// Requests that ended in a transport failure after retries.
    package var transportFailures = 0
    /// Requests that ended in a configuration fault.
    package var configurationFailures = 0
    /// Requests rejected locally by the header rules.
    package var invalidRequests = 0
    /// Requests that ended because of shutdown.
    package var shutdownFailures = 0

    package init() {}

    mutating func add(_ other: APNsClientStats) {
        requestsInFlight += other.requestsInFlight
        streamsInFlight += other.streamsInFlight
        waitingForWindow += other.waitingForWindow
        pools += other.pools
        connections += other.connections
        connectionsOpened += other.connectionsOpened
        transfersCreated += other.transfersCreated
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
