import Foundation

/// A value behind a pthread mutex (`NSLock`).
///
/// Used instead of `Synchronization.Mutex` on purpose: on Linux `Mutex` locks with raw futex system calls that
/// ThreadSanitizer does not model, so `swift test --sanitize=thread` reported every access inside `withLock` as a
/// race. With a pthread mutex the sanitizer sees the happens-before edges and real races stay detectable.
///
/// @unchecked Sendable: the value is only read or written inside `withLock`, while holding `lock`.
///
/// `withLock` is `@inlinable` (the storage `@usableFromInline`) and `public` (scripts/public-api.txt): every target
/// takes this lock, many once or more per notification, and only an inlined body is specialised for the caller's
/// value and result types; called across modules it stays generic and looks up type metadata at run time. Swift
/// 6.3 does not inline a `package` function into another module even when it is `@inlinable` (docs/BENCHMARKS.md,
/// issue 27), hence `public`.
///
/// The value lives in memory the lock owns, not in a stored `var`: `inout` access to a class's stored property is
/// checked for exclusivity at run time (`swift_beginAccess`/`swift_endAccess` and a thread-local look-up, about 150
/// instructions per `withLock`, several per notification; docs/BENCHMARKS.md, issue 26). The mutex already makes
/// the access exclusive, and a `body` that called back into the lock would deadlock on it before any overlap.
public final class Locked<Value>: @unchecked Sendable {
    @usableFromInline let lock = NSLock()
    @usableFromInline let storage: UnsafeMutablePointer<Value>

    package init(_ value: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with exclusive access to the value. `body` must not call back into this lock.
    @inlinable @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&storage.pointee)
    }
}
