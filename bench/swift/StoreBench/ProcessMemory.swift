import Clocks
import Foundation

/// Resident memory of this process from `/proc/self/status`.
enum ProcessMemory {
    /// (VmRSS, VmHWM) in MiB.
    static func current() -> (rss: Double, peak: Double) {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Double {
            for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
                let digits = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
                return digits / 1024  // kB → MiB
            }
            return 0
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    static func describe() -> String {
        let (rss, peak) = current()
        return String(format: "VmRSS %.1f MiB, VmHWM %.1f MiB", rss, peak)
    }
}

/// Monotonic seconds.
func seconds() -> Double { MonotonicClock.seconds() }

/// Prints a line and flushes it, so progress shows when stdout is a file.
func report(_ line: String) {
    print(line)
    fflush(nil)
}
