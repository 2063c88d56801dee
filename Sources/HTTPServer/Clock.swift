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
    /// Whole nanoseconds, saturating at zero for negative durations and at `UInt64.max` for huge ones.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        // Both parts carry the sign (-0.5 s is (0, -5e17)), so either being negative means "negative".
        if seconds < 0 || attoseconds < 0 { return 0 }
        let (scaled, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow2 ? .max : sum
    }
}
