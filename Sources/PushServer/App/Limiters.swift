import HTTPServer

/// Every rate limiter of the API, built from `limits` in the config.
///
/// - `secretAPI`: publish and customer API requests per instance (Beams: 100 per second).
/// - `perAddress`: device and reporting API requests per client address, shared by both APIs, so one address
///   cannot flood the one and then the other.
/// - `deviceAPI` / `reporting`: the same APIs per instance, from all addresses together. They bound the write load
///   the open internet can put on the store; the SDKs retry a 429 with back-off, so a storm is spread, not lost.
/// - `authFailures`: wrong secret keys per client address.
final class Limiters: Sendable {
    let secretAPI: RateLimiter
    let perAddress: RateLimiter?
    let deviceAPI: RateLimiter?
    let reporting: RateLimiter?
    let authFailures: FailureThrottle?
    let trustedProxies: Set<String>

    init(_ limits: ServerConfig.Limits, clock: @escaping MonotonicSeconds = monotonicSeconds) {
        let keys = limits.maxTrackedClients
        secretAPI = RateLimiter(perSecond: limits.requestsPerSecondPerInstance, clock: clock)
        perAddress = limits.ipRequestsPerSecond > 0
            ? RateLimiter(perSecond: limits.ipRequestsPerSecond, burst: limits.ipBurst, maxKeys: keys, clock: clock) : nil
        deviceAPI = limits.deviceRequestsPerSecondPerInstance > 0
            ? RateLimiter(perSecond: limits.deviceRequestsPerSecondPerInstance, clock: clock) : nil
        reporting = limits.reportsPerSecondPerInstance > 0
            ? RateLimiter(perSecond: limits.reportsPerSecondPerInstance, clock: clock) : nil
        authFailures = limits.authFailuresPerIP > 0
            ? FailureThrottle(maxFailures: limits.authFailuresPerIP, windowSeconds: limits.authFailureWindowSeconds,
                              lockoutSeconds: limits.authLockoutSeconds, maxKeys: keys, clock: clock) : nil
        trustedProxies = Set(limits.trustedProxies.compactMap(ClientAddress.canonical))
    }

    /// The client address `request` is charged to.
    func clientKey(_ request: HTTPRequest) -> String {
        ClientAddress.key(request, trustedProxies: trustedProxies)
    }
}
