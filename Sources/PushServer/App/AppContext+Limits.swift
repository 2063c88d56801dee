import BeamsModel
import ConfigModel
import HTTPServer

extension AppContext {
    /// Charges `cost` requests to the client address of `request` (device and reporting APIs). Runs before the
    /// instance is looked up, so requests naming unknown instances are limited too. - Throws: 429.
    func checkClientLimit(_ request: HTTPRequest, cost: Double = 1) throws(BeamsError) {
        guard let limiter = limiters.perAddress else { return }
        try limit(limiter, limiters.clientKey(request), cost: cost, label: "ip")
    }

    /// Charges `names` interest names (array elements as received, at most one device's largest set) to the
    /// request's client address (`limits.ipInterestsPerSecond`). - Throws: 429.
    func checkClientInterestLimit(_ request: HTTPRequest, names: Int) throws(BeamsError) {
        guard let limiter = limiters.perAddressInterests, names > 0 else { return }
        let cost = Double(min(names, Limiters.interestBurst))
        try limit(limiter, limiters.clientKey(request), cost: cost, label: "ip_interests")
    }

    /// Charges one request to `instance` on `limiter` (nil: unlimited). - Throws: 429.
    func checkInstanceLimit(_ limiter: RateLimiter?, _ instance: InstanceConfig) throws(BeamsError) {
        guard let limiter else { return }
        try limit(limiter, instance.id.lowercased(), cost: limiters.instanceCost(limiter), label: "instance")
    }

    func limit(_ limiter: RateLimiter, _ key: String, cost: Double = 1, label: String) throws(BeamsError) {
        switch limiter.take(key, cost: cost) {
        case .allowed:
            return
        case .untracked:
            metrics.increment(.rateLimitUntracked)
        case .limited(let retryAfter):
            metrics.increment(.rateLimited, ["limit": label])
            throw .rateLimited(retryAfter: retryAfter)
        }
    }
}
