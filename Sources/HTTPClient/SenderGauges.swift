/// The gauges every sender built on `SenderLedger` and `HTTPExchangeClient` reports (FCM, Web Push): its stats
/// type conforms, and `SenderLedger.stats(_:client:)` fills them in the one way.
package protocol SenderGauges {
    /// Jobs admitted and not final yet (in transfer, or waiting for a token or a retry).
    var requestsInFlight: Int { get set }
    /// `submit` calls suspended because the window, or their destination's share of it, is full.
    var waitingForWindow: Int { get set }
    /// Transfers attached to curl right now.
    var transfersInFlight: Int { get set }
    /// TCP/TLS connections opened so far.
    var connectionsOpened: Int { get set }
}

extension SenderLedger {
    /// The counters `read` takes from the state under the lock, with the window's gauges and `client`'s set.
    package func stats<Stats: SenderGauges>(_ read: (State) -> Stats, client: HTTPExchangeClient) -> Stats {
        var stats = withState { read($0) }
        stats.requestsInFlight = window.inUse
        stats.waitingForWindow = window.waiting + shares.waiting
        stats.transfersInFlight = client.transfersInFlight
        stats.connectionsOpened = client.connectionsOpened
        return stats
    }
}
