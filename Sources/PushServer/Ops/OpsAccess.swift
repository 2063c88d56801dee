import Foundation
import HTTPClient

/// Who may read `/metrics` and `/ready`'s details: they tell an attacker the queue depth, the APNs state and
/// every route's traffic. `/health` and `/ready`'s status code stay public so load balancers work.
///
/// The rules, first match wins:
/// 1. With an ops listener configured, the main listener never serves them.
/// 2. With a token configured, the request must carry it (`Authorization: Bearer …`, compared in constant time).
/// 3. On the ops listener (no token), everyone who can reach it may.
/// 4. Otherwise only loopback peers, and only requests no proxy forwarded: a reverse proxy on the same host
///    connects from loopback for every internet client, and adds `Forwarded`/`X-Forwarded-For`/`X-Real-IP`.
package struct OpsAccess: Sendable {
    package enum Decision: Sendable, Equatable {
        case allowed
        /// A token is configured and the request did not carry it (401).
        case tokenRequired
        /// Not served to this peer on this listener (403).
        case notServedHere
    }

    /// Which listener a request arrived on.
    package enum Listener: Sendable { case main, ops }

    package let token: String?
    package let hasOpsListener: Bool

    package init(token: String?, hasOpsListener: Bool) {
        self.token = token
        self.hasOpsListener = hasOpsListener
    }

    package static let forwardingHeaders = ["forwarded", "x-forwarded-for", "x-real-ip"]

    package func decide(authorization: String?, peer: String, forwarded: Bool, on listener: Listener) -> Decision {
        if listener == .main && hasOpsListener { return .notServedHere }
        if let token {
            guard let presented = BearerToken.parse(authorization), ConstantTime.equals(presented, token) else {
                return .tokenRequired
            }
            return .allowed
        }
        if listener == .ops { return .allowed }
        return Self.isLoopback(peer: peer) && !forwarded ? .allowed : .notServedHere
    }

    /// Whether `peer` (`ip:port` or `[ipv6]:port`, as the HTTP server reports it) is a loopback address:
    /// 127.0.0.0/8, `::1`, or 127.0.0.0/8 mapped into IPv6.
    package static func isLoopback(peer: String) -> Bool {
        guard let (host, _, _) = IPAddress.splitHostPort(peer) else { return false }
        return IPAddress(host)?.isLoopback ?? false
    }
}
