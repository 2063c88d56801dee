import Locking
import Foundation

/// A wall clock that only moves when a test says so.
final class TestClock: Sendable {
    private let current: Locked<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = Locked(start) }

    var now: Date { current.withLock { $0 } }

    func advance(minutes: Double) { current.withLock { $0 += minutes * 60 } }

    /// A closure for `APNsClientConfiguration.clock` / `ProviderTokenManager`.
    var closure: @Sendable () -> Date { { self.now } }
}
