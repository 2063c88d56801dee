import BeamsModel
import Foundation
import Locking
import Logging
import PushStore

/// One round of a local-time publish (`deliverAtLocalTime`): the targets whose zone reaches the local time at
/// this round's moment, and the moment of the next round.
///
/// A local-time publish is one job run in rounds, one per distinct due moment: each device is due at the first
/// moment at or after `localTimeFrom` when its zone's clock shows the local time (its own zone, or the default
/// fixed at intake). A round at moment T streams every target, sends those due exactly at T (whole seconds) and
/// notes the earliest due moment after T; the runner then reschedules the job for it (`rescheduleJob`), so the
/// engine wakes for it like for any scheduled publish, a restart included. Zones sharing an offset share a round,
/// so a publish has at most about 40 rounds over about 26 hours, each one scan of the targets.
package final class LocalTimeRound: Sendable {
    /// Zones whose due moment is remembered within a round; zone names are validated IANA names (a few hundred),
    /// the bound only guards against a store holding other values.
    static let maxCachedZones = 1024

    private struct State {
        var dueByZone: [String: Int64] = [:]
        var next: Int64?
        /// The latest due moment seen so far: the publish is not done before it (the completion estimate).
        var latest: Int64?
    }

    let time: LocalTime
    /// Whole seconds since 1970: the moment local times are counted from, and this round's moment.
    let from: Int64
    let roundAt: Int64
    private let defaultZone: TimeZone
    private let defaultZoneName: String
    private let state = Locked(State())

    /// - Returns: nil when the plan has no local time.
    package init?(delivery: DeliveryOptions?, roundAt: Date?) {
        guard let delivery, let time = delivery.localTime else { return nil }
        let from = delivery.localTimeFrom ?? roundAt ?? Date()
        self.time = time
        self.from = Int64(saturating: from.timeIntervalSince1970.rounded(.down))
        self.roundAt = max(self.from, Int64(saturating: (roundAt ?? from).timeIntervalSince1970.rounded(.down)))
        defaultZoneName = delivery.defaultTimeZone ?? "UTC"
        defaultZone = TimeZone(identifier: defaultZoneName) ?? TimeZone(secondsFromGMT: 0) ?? .current
    }

    /// When `zoneName`'s clock next shows the local time (the default zone for nil or unknown names).
    func due(zoneName: String?) -> Int64? {
        let name = zoneName ?? defaultZoneName
        if let cached = state.withLock({ $0.dueByZone[name] }) { return cached }
        let zone = zoneName.flatMap { TimeZone(identifier: $0) } ?? defaultZone
        guard let due = time.nextOccurrence(onOrAfter: from, in: zone) else { return nil }
        state.withLock { state in
            if state.dueByZone.count < Self.maxCachedZones { state.dueByZone[name] = due }
        }
        return due
    }

    /// Whether `target` is due in this round; notes a later due moment as a candidate for the next round.
    package func isDue(_ target: Target) -> Bool {
        guard let due = due(zoneName: target.timeZone) else { return false }
        if due == roundAt { return true }
        if due > roundAt {
            state.withLock { state in
                if state.next.map({ due < $0 }) ?? true { state.next = due }
                if state.latest.map({ due > $0 }) ?? true { state.latest = due }
            }
        }
        return false
    }

    /// The earliest due moment after this round seen so far; nil when every target seen was due by now.
    package var nextRound: Date? {
        state.withLock { $0.next }.map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    /// The latest due moment after this round seen so far (seconds since 1970); nil when none.
    var latestRound: Int64? { state.withLock { $0.latest } }
}
