import Foundation

/// A value behind a pthread mutex (`NSLock`).
///
/// Used instead of `Synchronization.Mutex` on purpose: on Linux `Mutex` locks with raw futex system calls that
/// ThreadSanitizer does not model, so `swift test --sanitize=thread` reported every access inside `withLock` as a
/// race. With a pthread mutex the sanitizer sees the happens-before edges and real races stay detectable.
///
/// @unchecked Sendable: `value` is only read or written inside `withLock`, while holding `lock`.
///
/// `withLock` is `@inlinable` (the storage `@usableFromInline`) and `public` (scripts/public-api.txt): every target
/// takes this lock, many once or more per notification, and only an inlined body is specialised for the caller's
/// value and result types; called across modules it stays generic and looks up type metadata at run time. Swift
/// 6.3 does not inline a `package` function into another module even when it is `@inlinable` (docs/BENCHMARKS.md,
/// issue 27), hence `public`.
public final class Locked<Value>: @unchecked Sendable {
    @usableFromInline let lock = NSLock()
    @usableFromInline var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value. `body` must not call back into this lock.
    @inlinable @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
