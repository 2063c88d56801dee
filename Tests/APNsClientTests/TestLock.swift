import Foundation

/// A value behind an `NSLock` for test helpers (pthread-based, so `--sanitize=thread` understands it, unlike
/// `Synchronization.Mutex` on Linux).
///
/// @unchecked Sendable: `value` is only touched inside `withLock`, while holding `lock`.
final class TestLock<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
