import Foundation

/// Blocking work on a thread of its own, awaited by a task without blocking it: the kit's one continuation for
/// "start a thread, wait for what it returns", so a call site holds none (docs/ARCHITECTURE.md, "Concurrency kit").
/// For work that must hold no pool thread or pooled connection for as long as it takes, as a store export's
/// snapshot lasts as long as its consumer reads.
package enum OwnThread {
    /// Runs `body` on a new thread and returns what it returns, or throws what it throws. The caller's task is
    /// suspended meanwhile; its cancellation does not reach `body`, which decides when it ends. `name` is the
    /// thread's name (`NamedThread`).
    package static func run<T: Sendable>(
        named name: String, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            NamedThread.start(name) { continuation.resume(with: Result { try body() }) }
        }
    }
}
