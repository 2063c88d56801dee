import Foundation

/// A value behind a `pthread` mutex (via `NSLock`).
///
/// Used instead of `Synchronization.Mutex` because ThreadSanitizer does not model Mutex's futex on Linux and
/// reports false races, while it understands pthread mutexes; CI runs the tests with `--sanitize=thread`.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only read or written while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
