import Locking

/// The bookkeeping the FCM and Web Push senders share: their in-flight window, and the jobs accepted and not yet
/// reported (`PendingJobs`) behind one lock together with the sender's own `State` (counters, credential
/// trackers). Its steps keep the three in step: a job is admitted with a window slot, reported exactly once (by
/// its result or by shutdown, whichever claims it first), and its slot freed when it is claimed.
///
/// ```swift
/// guard let job = await ledger.admit({ Job(id: $0, request: request) }) else { /* shutting down */ }
/// if ledger.claim(job.id, count: { $0.sent += 1 }) { job.onResult(result) }
/// let left = await ledger.shutdown(gracePeriod: 10, count: { $0.shutdownFailures += $1 }) { $0.onResult(.shutdown) }
/// ```
public final class SenderLedger<Job: Sendable, State: Sendable>: Sendable {
    private struct Book: Sendable {
        var pending = PendingJobs<Job>()
        var state: State
    }

    /// Backpressure: one slot per admitted job until it is claimed.
    public let window: InFlightWindow
    private let book: Locked<Book>

    /// - Parameters:
    ///   - capacity: jobs in flight at most (retries and their delays included).
    ///   - state: the sender's own counters and trackers, kept under the same lock as the pending jobs.
    public init(capacity: Int, state: State) {
        window = InFlightWindow(capacity: capacity)
        book = Locked(Book(state: state))
    }

    /// Runs `body` on the sender's state under the lock.
    public func withState<Result>(_ body: (inout State) -> Result) -> Result {
        book.withLock { body(&$0.state) }
    }

    /// Takes a window slot, suspending while none is free, and registers the job `make` builds for its id.
    /// - Returns: nil (no slot taken, nothing registered) once the window is closed for shutdown.
    public func admit(_ make: (Int) -> Job) async -> Job? {
        guard await window.acquire() else { return nil }
        return book.withLock { $0.pending.add(make) }
    }

    /// Whether job `id` is still unreported (a retry timer checks before sending again).
    public func isPending(_ id: Int) -> Bool {
        book.withLock { $0.pending.contains(id) }
    }

    /// Claims job `id`, runs `count` on the state in the same critical section, then frees the job's slot.
    /// - Returns: false (nothing counted) when the job was claimed already: shutdown reported it.
    public func claim(_ id: Int, count: (inout State) -> Void) -> Bool {
        let claimed = book.withLock { book -> Bool in
            guard book.pending.claim(id) else { return false }
            count(&book.state)
            return true
        }
        if claimed { window.release() }
        return claimed
    }

    /// Refuses new jobs, waits up to `gracePeriod` seconds for the admitted ones to be claimed, then claims every
    /// one left (`count` gets the state and how many), frees each one's slot and hands it to `report`.
    /// - Returns: the jobs claimed here, in the order they were admitted.
    public func shutdown(gracePeriod: Double, count: (inout State, Int) -> Void, report: (Job) -> Void) async -> [Job] {
        window.close()
        await window.waitUntilDrained(gracePeriod: gracePeriod)
        let left = book.withLock { book -> [Job] in
            let left = book.pending.claimAll()
            count(&book.state, left.count)
            return left
        }
        for job in left {
            window.release()
            report(job)
        }
        return left
    }
}
