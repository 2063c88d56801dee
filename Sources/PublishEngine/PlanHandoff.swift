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
/// claimed elsewhere, or cancelled) is dropped to make room.
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
        var bytes = 0
    }

    private let state = Locked(State())
    private let capacity: Int
    private let maxBytes: Int
    private let maxAge: Duration

    /// - Parameters:
    ///   - capacity: the most plans kept at once (a backlog deeper than this parses the rest).
    ///   - maxBytes: the most bytes of stored plans kept at once.
    ///   - maxAge: how long a plan nobody took may hold its place once the hand-off is full.
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
            if state.entries.count >= capacity || state.bytes + job.payload.count > maxBytes {
                for (key, entry) in state.entries where entry.keptAt.duration(to: now) > maxAge {
                    state.entries[key] = nil
                    state.bytes -= entry.payload.count
                }
                guard state.entries.count < capacity, state.bytes + job.payload.count <= maxBytes else { return }
            }
            let entry = Entry(plan: plan, payload: job.payload, keptAt: now)
            if let replaced = state.entries.updateValue(entry, forKey: key) { state.bytes -= replaced.payload.count }
            state.bytes += job.payload.count
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
}
