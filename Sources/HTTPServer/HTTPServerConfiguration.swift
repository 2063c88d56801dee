import Glibc

/// Everything the server needs to start.
package struct HTTPServerConfiguration: Sendable {
    /// IPv4 or IPv6 address to bind (`0.0.0.0`, `::`, `::1`). Default `127.0.0.1` (loopback only).
    package var host: String = "127.0.0.1"
    /// TCP port; 0 picks an ephemeral port (returned by `start()`). Default 8080.
    package var port: Int = 8080
    /// When set, the listener speaks HTTPS only.
    package var tls: TLSConfiguration? = nil
    /// Event-loop threads, each with its own `SO_REUSEPORT` listener. Default: the number of active cores.
    package var eventLoopCount: Int = ProcessInfoCores.active
    package var limits = HTTPLimits()
    /// Sent as the `Server` header when set. Default nil (no header).
    package var serverName: String? = nil

    /// - Parameter eventLoopCount: nil means one loop per active core.
    package init(
        host: String = "127.0.0.1", port: Int = 8080, tls: TLSConfiguration? = nil,
        eventLoopCount: Int? = nil, limits: HTTPLimits = HTTPLimits(), serverName: String? = nil
    ) {
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
