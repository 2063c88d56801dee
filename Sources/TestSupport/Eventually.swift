import Clocks
import Foundation

/// A condition a test waited for did not come true in time.
package struct EventuallyTimeout: Error, CustomStringConvertible {
    package let description: String
}

/// Waits until `condition` holds, checking it every `interval`, and throws `EventuallyTimeout` when it still does
/// not hold after `timeout`: the one way a test waits for another thread to get somewhere.
///
/// Why not a bare polling loop: one without a deadline hangs the whole run when the code under test is broken, and
/// one whose deadline passes silently turns into a confusing assertion further down. The timeout is generous (a
/// loaded 2-core CI machine), since a passing test returns as soon as the condition holds.
///
/// A test that holds a thread or a writer with a gate must release it when this throws (a `defer` declared after
/// the `async let`), or the failure turns into a hang while the scope waits for the held task.
///
/// Disfavoured, so that `try await eventually { … }` in a task picks the sleeping variant below rather than block
/// a thread of the cooperative pool.
@_disfavoredOverload
package func eventually(
    _ what: @autoclosure () -> String = "the condition", timeout: Duration = .seconds(30),
    interval: Duration = .milliseconds(5), file: StaticString = #filePath, line: UInt = #line,
    _ condition: () throws -> Bool
) throws {
    let start = MonotonicClock.now()
    while try !condition() {
        guard MonotonicClock.elapsed(since: start) < timeout else {
            throw EventuallyTimeout(description: "\(what()) did not hold within \(timeout) (\(file):\(line))")
        }
        usleep(UInt32(clamping: interval.nanoseconds / 1_000))
    }
}

/// `eventually` for a test that waits in a task: sleeps without holding a thread of the cooperative pool.
package func eventually(
    _ what: @autoclosure () -> String = "the condition", timeout: Duration = .seconds(30),
    interval: Duration = .milliseconds(5), file: StaticString = #filePath, line: UInt = #line,
    _ condition: () async throws -> Bool
) async throws {
    let start = MonotonicClock.now()
    while try await !condition() {
        guard MonotonicClock.elapsed(since: start) < timeout else {
            throw EventuallyTimeout(description: "\(what()) did not hold within \(timeout) (\(file):\(line))")
        }
        try await Task.sleep(for: interval)
    }
}
