import Foundation
import PushStore

/// Whether the store can write, judged from the outcomes of its writes, and what the operator should be told.
///
/// A pure value: the time is passed in, so it is tested without a disk or a clock. An outage is logged when it
/// starts, then at most once per `logInterval` while failures continue, and its end once. A store flapping
/// between failing and writing (a disk at the edge of full) still logs at most a line or two per interval: a
/// failure within `logInterval` of the previous line starts the outage silently, and an outage that was never
/// reported ends silently.
package struct StoreWriteState: Sendable, Equatable {
    /// A line for the log.
    package enum Report: Sendable, Equatable {
        /// Writes started failing.
        case failing(StoreUnavailableError)
        /// They still fail: `failures` so far, since `since`.
        case stillFailing(StoreUnavailableError, since: Date, failures: Int)
        /// Writes succeed again, after failing `failures` times since `since`.
        case recovered(since: Date, failures: Int)
    }

    /// The current outage.
    package struct Outage: Sendable, Equatable {
        package var since: Date
        package var last: StoreUnavailableError
        package var failures: Int
        /// Whether its start was logged (its end is logged only then).
        package var reported: Bool
    }

    /// The shortest time between two lines about the same condition.
    package let logInterval: TimeInterval
    /// nil while the store writes.
    package private(set) var outage: Outage?
    package private(set) var lastLog: Date?

    package init(logInterval: TimeInterval) { self.logInterval = logInterval }

    package var isWritable: Bool { outage == nil }

    /// Takes one event in. - Returns: what to log, if anything.
    package mutating func record(_ event: StoreHealthEvent, at now: Date) -> Report? {
        switch event {
        case .wrote:
            guard let ended = outage else { return nil }
            outage = nil
            guard ended.reported else { return nil }
            lastLog = now
            return .recovered(since: ended.since, failures: ended.failures)
        case .failed(let error):
            var current = outage ?? Outage(since: now, last: error, failures: 0, reported: false)
            current.last = error
            current.failures += 1
            var report: Report?
            if mayLog(at: now) {
                lastLog = now
                report =
                    current.reported
                    ? .stillFailing(error, since: current.since, failures: current.failures)
                    : .failing(error)
                current.reported = true
            }
            outage = current
            return report
        }
    }

    /// A wall clock set back counts as time passed: a line late is better than silence until the clock catches up.
    private func mayLog(at now: Date) -> Bool {
        guard let lastLog else { return true }
        return abs(now.timeIntervalSince(lastLog)) >= logInterval
    }
}
