import Foundation
import Locking

/// A wall clock that only moves when a test says so, so a test of expiry, refresh or retention never sleeps.
///
/// Hand it to the code under test as `clock.closure` (or `{ clock.now }`) wherever that code takes a
/// `() -> Date`.
package final class TestClock: Sendable {
    private let current: Locked<Date>

    /// A clock standing at `start` (by default 2023-11-14T22:13:20Z, a whole number of milliseconds, so a store
    /// that keeps milliseconds reads back the same instant).
    package init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) { current = Locked(start) }

    /// The time the clock stands at.
    package var now: Date { current.withLock { $0 } }

    /// Moves the clock forward by `seconds` (backwards when negative).
    package func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }

    /// Moves the clock forward by `minutes`.
    package func advance(minutes: Double) { advance(minutes * 60) }

    /// The clock as the closure the code under test takes (`APNsClientConfiguration.clock`, `ProviderTokenManager`).
    package var closure: @Sendable () -> Date { { self.now } }
}
