import Foundation

/// A value behind a pthread mutex (`NSLock`).
///
/// Used instead of `Synchronization.Mutex` on purpose: on Linux `Mutex` locks with raw futex system calls that
/// ThreadSanitizer does not model, so `swift test --sanitize=thread` reported every access inside `withLock` as a
/// race. With a pthread mutex the sanitizer sees the happens-before edges and real races stay detectable.
///
/// @unchecked Sendable: `value` is only read or written inside `withLock`, while holding `lock`.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value. `body` must not call back into this lock.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
