import Dispatch
import Foundation
import Locking

/// Runs `body` on a plain thread of its own (not the Swift concurrency pool: the tests here read what the kernel or
/// a blocking wait does to that thread). - Returns: its result, or nil when it did not return within `limit`
/// seconds.
func onThread<T: Sendable>(limit: Double = 10, _ body: @escaping @Sendable () -> T) -> T? {
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }.start()
    guard done.wait(timeout: .now() + limit) == .success else { return nil }
    return result.withLock { $0 }
}
