import HTTPClient

/// The destination rule for endpoints on hosts nobody can list in advance (UnifiedPush: the phone's user picks the
/// push server): any host, on an allowed port, to which the address rules (`DestinationPolicy`, checked on every
/// socket curl opens) let a connection through. Replaces `WebPushHostAllowlist` in a sender built with it.
///
/// Port rule: 443 (what every public push server uses) unless the operator lists more (`ports`): a public host
/// that drops connection attempts on some port, or a service on another port of a public host (SMTP, say), is
/// not reachable through a registered endpoint.
package struct WebPushOpenEndpoints: Sendable, Equatable {
    /// Ports endpoints may use. Default 443 only.
    package var ports: Set<Int>
    /// Distinct hosts (host and port) the sender contacts within `hostIdleSeconds`: what an instance's devices can
    /// make this server connect to, and how many per-host shares its window is split into. Default 1000.
    package var maxHosts: Int
    /// A host not contacted for this long no longer counts towards `maxHosts`. Default 3600.
    package var hostIdleSeconds: Double

    package init(ports: Set<Int> = [443], maxHosts: Int = 1000, hostIdleSeconds: Double = 3600) {
        self.ports = ports.isEmpty ? [443] : ports
        self.maxHosts = max(1, maxHosts)
        self.hostIdleSeconds = max(0, hostIdleSeconds)
    }

    /// Whether `url`'s port may be used.
    package func allowsPort(of url: HTTPURL) -> Bool { ports.contains(url.port) }

    /// `host` or `host:port` (port other than 443): the key of the host's share of the window and of the cap.
    package static func hostKey(_ url: HTTPURL) -> String {
        var host = url.host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        return url.port == 443 ? host : "\(host):\(url.port)"
    }
}

/// The distinct hosts a sender with open endpoints has contacted recently, at most `limit` (`maxHosts`): a new
/// host is admitted while fewer are counted, after hosts idle for `idleSeconds` are forgotten. Pure: the caller
/// passes the time (monotonic seconds) and keeps it under its lock.
package struct DistinctHostBook: Sendable, Equatable {
    package let limit: Int
    package let idleSeconds: Double
    private var lastUse: [String: Double] = [:]

    package init(limit: Int, idleSeconds: Double) {
        self.limit = max(1, limit)
        self.idleSeconds = idleSeconds
    }

    /// Hosts counted now.
    package var count: Int { lastUse.count }

    /// Records a use of `host` and returns true, or false (nothing recorded) when `host` is new and `limit` hosts
    /// used within `idleSeconds` are counted already.
    package mutating func admit(_ host: String, now: Double) -> Bool {
        if lastUse[host] != nil {
            lastUse[host] = now
            return true
        }
        if lastUse.count >= limit {
            lastUse = lastUse.filter { now - $0.value < idleSeconds }
            guard lastUse.count < limit else { return false }
        }
        lastUse[host] = now
        return true
    }
}
