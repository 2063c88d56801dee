import BeamsModel
import Clocks
import Foundation
import Locking
import PushStore

/// Plans this node built at intake, handed to the run that claims their job here, so that the run does not parse
/// the stored plan again (~60,000 instructions a publish, docs/BENCHMARKS.md "Intake's store calls per job").
///
/// A kept plan is taken only for the very bytes stored with its job (compared whole), and those bytes decode to an
/// equal plan (`PublishPlanTests`): a run is the same whether its plan came from here or from the store. Bounded:
/// at most `capacity` plans and `maxBytes` of their stored form. A publish that finds it full keeps nothing here
/// and its run parses the stored plan, as every run on another node does; a plan kept longer than `maxAge` (its job
/// claimed elsewhere, or cancelled) is dropped. Each `keep` costs O(1) amortised, full or not: under a backlog
/// deeper than `capacity` it is full for as long as the backlog lasts, and intake calls it for every publish.
package final class PlanHandoff: Sendable {
    private struct Key: Hashable {
        let instanceID: String
        let publishID: String
    }

    private struct Entry {
        let plan: PublishPlan
        let payload: Data
        let keptAt: MonotonicInstant
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Every key kept, with when, the oldest first. A key taken (or kept again) since stays until it reaches
        /// the front or a compaction drops it, so this holds at most twice `capacity` keys.
        var order = FIFO<(key: Key, keptAt: MonotonicInstant)>()
        var bytes = 0

        /// Whether `kept` is still the entry `entries` holds for its key (not taken, not kept again since).
        func holds(_ kept: (key: Key, keptAt: MonotonicInstant)) -> Bool {
            entries[kept.key]?.keptAt == kept.keptAt
        }
    }

    private let state = Locked(State())
    private let capacity: Int
    private let maxBytes: Int
    private let maxAge: Duration

    /// - Parameters:
    ///   - capacity: the most plans kept at once (a backlog deeper than this parses the rest).
    ///   - maxBytes: the most bytes of stored plans kept at once.
    ///   - maxAge: how long a plan nobody took is kept (dropped by the first `keep` after that).
    package init(capacity: Int = 1024, maxBytes: Int = 8 << 20, maxAge: Duration = .seconds(60)) {
        self.capacity = capacity
        self.maxBytes = maxBytes
        self.maxAge = maxAge
    }

    /// Keeps `plan`, stored with `job` as `job.payload`, for the run that claims `job` on this node. A scheduled
    /// publish is not kept: its run comes later than a hand-off is meant to wait.
    package func keep(_ plan: PublishPlan, of job: PublishJob) {
        guard job.notBefore == nil else { return }
        let key = Key(instanceID: job.instanceID, publishID: job.publishID)
        let now = MonotonicInstant.now
        state.withLock { state in
            // The front of the age order: keys taken since, and plans older than `maxAge`. Each key is popped once,
            // so this is O(1) amortised; a scan of every entry whenever the hand-off was full cost a backlog's
            // intake 1,024 entries per publish.
            while let oldest = state.order.first {
                if state.holds(oldest) {
                    guard oldest.keptAt.duration(to: now) > maxAge else { break }
                    if let dropped = state.entries.removeValue(forKey: oldest.key) {
                        state.bytes -= dropped.payload.count
                    }
                }
                _ = state.order.popFirst()
            }
            // Keys taken behind a front that is still young: dropped once they could outnumber the entries, which
            // leaves at most `capacity` keys, so the next compaction is `capacity` keeps away.
            if state.order.count >= 2 * capacity {
                let kept = state.order.removeAll().filter { state.holds($0) }
                state.order.append(contentsOf: kept)
            }
            guard state.entries.count < capacity, state.bytes + job.payload.count <= maxBytes else { return }
            let entry = Entry(plan: plan, payload: job.payload, keptAt: now)
            if let replaced = state.entries.updateValue(entry, forKey: key) { state.bytes -= replaced.payload.count }
            state.bytes += job.payload.count
            state.order.append((key, now))
        }
    }

    /// The plan kept for `job` if it was kept for these stored bytes (removed either way), nil otherwise.
    package func take(for job: PublishJob) -> PublishPlan? {
        let key = Key(instanceID: job.instanceID, publishID: job.publishID)
        guard
            let entry = state.withLock({ state -> Entry? in
                guard let entry = state.entries.removeValue(forKey: key) else { return nil }
                state.bytes -= entry.payload.count
                return entry
            })
        else { return nil }
        return entry.payload == job.payload ? entry.plan : nil
    }

    /// How many plans are kept now.
    package var count: Int { state.withLock { $0.entries.count } }

    /// How many keys the age order holds now (at most twice `capacity`).
    package var orderedKeys: Int { state.withLock { $0.order.count } }
}
