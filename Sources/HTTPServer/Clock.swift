import Glibc

/// Monotonic nanoseconds; deadlines are compared against this, never against wall time.
enum MonotonicClock {
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at zero for negative durations.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}

/// The `Date` header value (RFC 9110 §5.6.7 IMF-fixdate), formatted at most once per second per loop.
struct HTTPDateCache {
    private var second: time_t = -1
    private(set) var value: [UInt8] = []

    mutating func current() -> [UInt8] {
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
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
