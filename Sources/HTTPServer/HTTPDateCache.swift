import Glibc

/// The `Date` header value (RFC 9110 §5.6.7 IMF-fixdate), formatted at most once per second per loop.
struct HTTPDateCache {
    private var second: time_t = -1
    private(set) var value: [UInt8] = []
    private let fixed: Bool

    /// - Parameter fixed: a constant value to return instead of the clock's (tests).
    init(fixed: String? = nil) {
        self.fixed = fixed != nil
        if let fixed { value = Array(fixed.utf8) }
    }

    mutating func current() -> [UInt8] {
        if fixed { return value }
        let now = time(nil)
        if now != second {
            second = now
            value = Array(HTTPDateCache.format(now).utf8)
        }
        return value
    }

    static func format(_ t: time_t) -> String {
        var t = t
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let day = "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)])"
        return "\(day) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
