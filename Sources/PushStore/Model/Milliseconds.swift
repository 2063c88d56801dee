import Foundation
import Logging

/// Every backend keeps time in whole milliseconds since 1970; these conversions are shared so all backends round
/// the same way.
extension Date {
    /// Whole milliseconds since 1970, rounded down: the unit every timestamp column uses. Saturates at
    /// `Int64.min`/`Int64.max` (NaN reads as 0): dates built from client or APNs numbers can be far outside any
    /// real time, and must be stored (or refused by the caller), never trap.
    package var millisecondsSince1970: Int64 { Int64(saturating: (timeIntervalSince1970 * 1000).rounded(.down)) }

    /// Whole milliseconds since 1970 of the moment `duration` after this date (a lease's end), saturating like
    /// `millisecondsSince1970`: a configured lease of any length must not trap.
    package func millisecondsSince1970(after duration: Duration) -> Int64 {
        let (sum, overflow) = millisecondsSince1970.addingReportingOverflow(duration.milliseconds)
        if overflow { return duration < .zero ? .min : .max }
        return sum
    }

    /// The date `milliseconds` after 1970.
    package init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension Duration {
    /// Whole milliseconds, rounded toward zero, saturating at `Int64`'s range.
    package var milliseconds: Int64 {
        let parts = components
        let (scaled, overflow) = parts.seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return parts.seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(parts.attoseconds / 1_000_000_000_000_000)
        if overflow2 { return parts.seconds < 0 ? .min : .max }
        return sum
    }
}
