#if canImport(Glibc)
    import Glibc
#endif

/// The process's one monotonic clock: every deadline, timeout, rate-limit window and measured duration reads it,
/// never wall time (which NTP or an operator's `date` can step backwards or forwards).
///
/// It is `CLOCK_MONOTONIC`, read with one `clock_gettime` vDSO call: cheap enough for an event loop's every
/// iteration. `ContinuousClock` (`CLOCK_BOOTTIME` on Linux), `SuspendingClock` and `DispatchTime` would each do, but
/// mixing them mixes epochs; one clock keeps readings from different layers comparable. It lives in its own
/// target below every other layer so that the HTTP server, the APNs client and the engine can all share it.
///
/// A deadline that is waited for is a `MonotonicInstant` (a typed reading), and every timer goes through
/// `MonotonicTimer`, which hands the platform's timers only the time left: no other clock's instants are kept.
///
/// Wall time (`Date`) is still right for timestamps that leave the process (token `iat`, stored `created_at`);
/// pure state machines take "now" as an argument, and their owners pass a reading of this clock or inject a
/// test clock (the model: `ProviderTokenState`, `TokenBuckets`).
package enum MonotonicClock {
    /// Nanoseconds since an arbitrary start (boot); never decreases.
    package static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// `now()` in seconds, for code that measures time as a `Double` (the rate limiters).
    package static func seconds() -> Double {
        Double(now()) / 1e9
    }

    /// The time since `start`, a reading of `now()`; zero if `start` is in the future.
    package static func elapsed(since start: UInt64) -> Duration {
        let current = now()
        return .nanoseconds(Int64(clamping: current >= start ? current - start : 0))
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at zero for negative durations and at `UInt64.max` for huge ones.
    package var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        // Both parts carry the sign (-0.5 s is (0, -5e17)), so either being negative means "negative".
        if seconds < 0 || attoseconds < 0 { return 0 }
        let (scaled, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow2 ? .max : sum
    }
}
