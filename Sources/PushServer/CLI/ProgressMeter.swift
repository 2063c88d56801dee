import Clocks
import Foundation
import Locking
import Logging

/// Progress on standard error while it is a terminal (`\r`-rewritten, at most 4 times a second), and one
/// closing line there either way.
final class ProgressMeter: Sendable {
    private let verb: String
    private let interactive = isatty(2) == 1
    private let start = MonotonicClock.now()
    private let lastShown = Locked<UInt64>(0)

    init(verb: String) { self.verb = verb }

    func update(_ count: Int) {
        guard interactive else { return }
        let now = MonotonicClock.now()
        let due = lastShown.withLock { last in
            guard now &- last >= 250_000_000 else { return false }
            last = now
            return true
        }
        if due { FileDescriptor.writeAll(2, "\r\(line(count, now: now))") }
    }

    /// The closing line; nil when the command failed.
    func finish(_ count: Int?) {
        let now = MonotonicClock.now()
        if interactive { FileDescriptor.writeAll(2, "\r") }
        if let count { Console.err(line(count, now: now)) } else if interactive { Console.err("") }
    }

    private func line(_ count: Int, now: UInt64) -> String {
        let seconds = Double(now &- start) / 1e9
        let rate = seconds > 0 ? Int(Double(count) / seconds) : 0
        return "\(verb) \(count) devices in \(String(format: "%.1f", seconds)) s (\(rate)/s)"
    }
}
