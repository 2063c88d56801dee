import HTTPServer
import Locking

/// Every rate limiter of the API, built from `limits` in the config.
///
/// - `secretAPI`: publish and customer API requests per instance (Beams: 100 per second).
/// - `perAddress`: device and reporting API requests per client address, shared by both APIs, so one address
///   cannot flood the one and then the other.
/// - `perAddressInterests`: interest names per client address (`ipInterestsPerSecond`), beside `perAddress`: each new
///   name costs the store a random index page, so names have a budget of their own, whose bucket holds one device's
///   largest set (`DeviceAPI.maxInterestsPerDevice`). `ipRequestsPerSecond` 0 turns every per-address limit off
///   (clients behind an untrusted proxy share one address), this one included.
/// - `deviceAPI` / `reporting`: the same APIs per instance, from all addresses together. They bound the write load
///   the open internet can put on the store; the SDKs retry a 429 with back-off, so a storm is spread, not lost.
/// - `authFailures`: wrong secret keys per client address.
///
/// Several nodes on one database (PostgreSQL): each per-instance limit is shared out among the live nodes
/// (`liveNodes`, from the nodes' heartbeats): a node charges each request `liveNodes` tokens, so behind a load
/// balancer that spreads requests evenly the nodes together allow about the configured rate. Per-address limits
/// stay per node.
final class Limiters: Sendable {
    let secretAPI: RateLimiter
    let perAddress: RateLimiter?
    let perAddressInterests: RateLimiter?
    let deviceAPI: RateLimiter?
    let reporting: RateLimiter?
    let authFailures: FailureThrottle?
    let trustedProxies: Set<String>
    /// Nodes sharing the per-instance limits, this one included (1 without a shared database).
    let liveNodes: Locked<Int>

    init(
        _ limits: ServerConfig.Limits, liveNodes: Locked<Int> = Locked(1),
        clock: @escaping MonotonicSeconds = monotonicSeconds
    ) {
        self.liveNodes = liveNodes
        let keys = limits.maxTrackedClients
        secretAPI = RateLimiter(perSecond: limits.requestsPerSecondPerInstance, clock: clock)
        perAddress =
            limits.ipRequestsPerSecond > 0
            ? RateLimiter(perSecond: limits.ipRequestsPerSecond, burst: limits.ipBurst, maxKeys: keys, clock: clock)
            : nil
        perAddressInterests =
            limits.ipInterestsPerSecond > 0 && limits.ipRequestsPerSecond > 0
            ? RateLimiter(
                perSecond: limits.ipInterestsPerSecond, burst: Self.interestBurst, maxKeys: keys, clock: clock)
            : nil
        deviceAPI =
            limits.deviceRequestsPerSecondPerInstance > 0
            ? RateLimiter(perSecond: limits.deviceRequestsPerSecondPerInstance, clock: clock) : nil
        reporting =
            limits.reportsPerSecondPerInstance > 0
            ? RateLimiter(perSecond: limits.reportsPerSecondPerInstance, clock: clock) : nil
        authFailures =
            limits.authFailuresPerIP > 0
            ? FailureThrottle(
                maxFailures: limits.authFailuresPerIP, windowSeconds: limits.authFailureWindowSeconds,
                lockoutSeconds: limits.authLockoutSeconds, maxKeys: keys, clock: clock) : nil
        trustedProxies = Set(limits.trustedProxies.compactMap(ClientAddress.canonical))
    }

    /// The per-address interest bucket: one device's largest set (`DeviceAPI.maxInterestsPerDevice`), so it always
    /// passes from a full bucket (an SDK answered 429 retries, and a set that could never pass would retry forever).
    static let interestBurst = 5000

    /// What one request costs on a per-instance `limiter`: this node's share of the rate. At most the limiter's
    /// burst, so a request can always pass once its bucket is full.
    func instanceCost(_ limiter: RateLimiter) -> Double {
        Double(min(max(1, liveNodes.withLock { $0 }), max(1, limiter.perSecond)))
    }

    /// The client address `request` is charged to.
    func clientKey(_ request: HTTPRequest) -> String {
        ClientAddress.key(request, trustedProxies: trustedProxies)
    }
}
