/// The per-address bookkeeping every loop of one server shares (behind one lock, `ServerContext.addresses`): open
/// connections per client address (`PeerAddress.Key`) and request-body bytes reserved, per address and in total.
/// Pure: it decides, the loops act (refuse the connection, answer 503).
///
/// Why per address: without it one address can hold every connection the server allows (`maxConnections`) with
/// idle keep-alive connections, and every other client, the publishing backend included, is refused. Connections
/// count from accept, so those still in the TLS handshake or waiting for their request head count too.
///
/// Why a body budget: a request body is buffered in full before its handler runs, so N slow uploads hold N times
/// the body limit. Bytes are reserved when the request head arrives (the declared `Content-Length`, or the route's
/// limit for a chunked body) and released when its response is written or the connection closes.
struct AddressTable {
    struct Entry: Equatable {
        var connections = 0
        var bodyBytes = 0
    }

    /// Connections one address may hold open; 0 = no limit.
    let maxConnectionsPerAddress: Int
    /// Body bytes reserved across all connections.
    let maxBodyBytes: Int
    /// Body bytes one address may have reserved (so that one address cannot take the whole budget).
    let maxBodyBytesPerAddress: Int
    private(set) var entries: [PeerAddress.Key: Entry] = [:]
    /// Body bytes reserved in total.
    private(set) var bodyBytes = 0

    enum BodyDecision: Equatable {
        case reserved
        /// The server-wide budget is spent.
        case overBudget
        /// This address holds its share already.
        case overAddressShare
    }

    init(maxConnectionsPerAddress: Int, maxBodyBytes: Int, maxBodyBytesPerAddress: Int) {
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.maxBodyBytes = maxBodyBytes
        self.maxBodyBytesPerAddress = maxBodyBytesPerAddress
    }

    /// Counts a new connection from `key` unless the address holds its limit already. Returns whether it may stay.
    mutating func open(_ key: PeerAddress.Key) -> Bool {
        var entry = entries[key, default: Entry()]
        if maxConnectionsPerAddress > 0 && entry.connections >= maxConnectionsPerAddress { return false }
        entry.connections += 1
        entries[key] = entry
        return true
    }

    /// A connection `open` counted has closed.
    mutating func closed(_ key: PeerAddress.Key) {
        update(key) { $0.connections = max(0, $0.connections - 1) }
    }

    /// Reserves `bytes` of body for a request of `key` (nil: an exempt address, which is held to the server-wide
    /// budget only).
    mutating func reserveBody(_ bytes: Int, for key: PeerAddress.Key?) -> BodyDecision {
        guard bytes > 0 else { return .reserved }
        if bytes > maxBodyBytes - bodyBytes { return .overBudget }
        if let key {
            var entry = entries[key, default: Entry()]
            if bytes > maxBodyBytesPerAddress - entry.bodyBytes { return .overAddressShare }
            entry.bodyBytes += bytes
            entries[key] = entry
        }
        bodyBytes += bytes
        return .reserved
    }

    /// Returns what `reserveBody` reserved.
    mutating func releaseBody(_ bytes: Int, for key: PeerAddress.Key?) {
        guard bytes > 0 else { return }
        bodyBytes = max(0, bodyBytes - bytes)
        if let key { update(key) { $0.bodyBytes = max(0, $0.bodyBytes - bytes) } }
    }

    /// Applies `change` and forgets an address that holds nothing any more, so the table stays as small as the
    /// set of connected addresses.
    private mutating func update(_ key: PeerAddress.Key, _ change: (inout Entry) -> Void) {
        guard var entry = entries[key] else { return }
        change(&entry)
        entries[key] = entry == Entry() ? nil : entry
    }
}
