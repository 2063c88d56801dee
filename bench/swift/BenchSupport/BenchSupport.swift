import Foundation
import Synchronization

// What the Swift benchmarks measure and print alike, written once: process CPU time, the load average printed
// beside every figure, and the tally a fan-out benchmark waits on.

/// The process's CPU time (user and system, all threads) in seconds: on a loaded machine a steadier cost than the
/// wall time.
package func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
}

/// The 1-minute load average: on a shared machine it says how much to trust a rate.
package func loadAverage() -> String {
    let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?"
    return String(text.split(separator: " ").first ?? "?")
}

/// Calls `handle` with each `--name value` pair of the command line; exits with status 2 on a name it returns false
/// for.
package func forEachOption(_ handle: (_ name: String, _ value: String) -> Bool) {
    var arguments = CommandLine.arguments.dropFirst().makeIterator()
    while let argument = arguments.next() {
        guard handle(argument, arguments.next() ?? "") else {
            print("unknown option \(argument)")
            exit(2)
        }
    }
}

/// Counts results by label and wakes the waiting task when the expected number arrived.
package final class Tally: Sendable {
    private struct State {
        var done = 0
        var expected = Int.max
        var counts: [String: Int] = [:]
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    package init() {}

    package func record(_ label: String) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.done += 1
            state.counts[label, default: 0] += 1
            guard state.done >= state.expected, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns once `expected` results were recorded (at once if they already were).
    package func wait(for expected: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                state.expected = expected
                if state.done >= expected { return true }
                state.waiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// The count of each label.
    package var counts: [String: Int] { state.withLock { $0.counts } }

    /// `label:count,…` sorted by label.
    package var summary: String {
        counts.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
    }
}
