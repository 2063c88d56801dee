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
