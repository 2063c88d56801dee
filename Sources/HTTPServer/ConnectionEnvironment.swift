/// What every connection of one event loop shares: the router, the limits in loop units, and the two per-loop
/// sources a response needs (the `Date` header value and new request IDs).
///
/// A class so that each connection's state machine holds one reference instead of copies. Confined to its loop's
/// thread (tests make their own), hence not `Sendable`.
final class ConnectionEnvironment {
    let router: Router
    let limits: HTTPLimits
    let serverName: String?
    /// Size of the loop's read buffer: the unit of the per-wake-up read budgets.
    let readBufferSize: Int
    /// Bytes a client may have buffered with us while its previous request is handled or written; past it the
    /// connection stops reading (a client pipelining faster than we answer).
    let maxBufferedWhileBusy: Int
    /// How long a closing connection discards input after our final response (RFC 9112 §9.6).
    let lingerNanos: UInt64
    /// The loop's timer granularity; a timed-out connection lingers one tick at most.
    let tickNanos: UInt64

    let headerReadNanos: UInt64
    let bodyReadNanos: UInt64
    let idleNanos: UInt64
    let writeNanos: UInt64
    let handshakeNanos: UInt64

    /// The last handler header block rendered on this loop (`ResponseSerializer`).
    let headerCache = HeaderBlockCache()
    private var dateCache: HTTPDateCache
    /// `prefix-`, as bytes.
    private let requestIDPrefix: [UInt8]
    private var requestCounter: UInt64 = 0

    /// - Parameters:
    ///   - requestIDPrefix: generated IDs are `prefix-<counter in hex>`.
    ///   - fixedDate: a constant `Date` header value (tests); nil formats the wall clock once per second.
    init(
        router: Router, limits: HTTPLimits, serverName: String?, requestIDPrefix: String,
        readBufferSize: Int = 64 * 1024, lingerNanos: UInt64 = 2_000_000_000, tickNanos: UInt64 = 100_000_000,
        fixedDate: String? = nil
    ) {
        self.router = router
        self.limits = limits
        self.serverName = serverName
        self.requestIDPrefix = Array((requestIDPrefix + "-").utf8)
        self.readBufferSize = readBufferSize
        self.maxBufferedWhileBusy = limits.maxRequestLineBytes + limits.maxHeaderBytes + readBufferSize
        self.lingerNanos = lingerNanos
        self.tickNanos = tickNanos
        headerReadNanos = limits.headerReadTimeout.nanoseconds
        bodyReadNanos = limits.bodyReadTimeout.nanoseconds
        idleNanos = limits.idleTimeout.nanoseconds
        writeNanos = limits.writeTimeout.nanoseconds
        handshakeNanos = limits.tlsHandshakeTimeout.nanoseconds
        dateCache = HTTPDateCache(fixed: fixedDate)
    }

    /// The `Date` header value for a response written now.
    func date() -> [UInt8] { dateCache.current() }

    /// A new request ID, unique within the process run (random per-loop prefix, then a counter in lowercase hex).
    func nextRequestID() -> String {
        requestCounter += 1
        let counter = requestCounter
        let digits = (UInt64.bitWidth - counter.leadingZeroBitCount + 3) / 4
        // Written in place: one allocation per ID (none when it fits a small string), no intermediate strings.
        return String(unsafeUninitializedCapacity: requestIDPrefix.count + digits) { buffer in
            let prefixEnd = buffer.initialize(fromContentsOf: requestIDPrefix)
            var rest = counter
            for i in stride(from: prefixEnd + digits - 1, through: prefixEnd, by: -1) {
                let nibble = UInt8(truncatingIfNeeded: rest & 0xF)
                buffer[i] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                rest >>= 4
            }
            return prefixEnd + digits
        }
    }
}
