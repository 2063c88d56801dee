import Locking

/// The bookkeeping the FCM and Web Push senders share: their in-flight window (with a bounded share per
/// destination when jobs are admitted with a key), and the jobs accepted and not yet
/// reported (`PendingJobs`) behind one lock together with the sender's own `State` (counters, credential
/// trackers). Its steps keep the three in step: a job is admitted with a window slot, reported exactly once (by
/// its result or by shutdown, whichever claims it first), and its slot freed when it is claimed.
///
/// ```swift
/// guard let job = await ledger.admit({ Job(id: $0, request: request) }) else { /* shutting down */ }
/// if ledger.claim(job.id, count: { $0.sent += 1 }) { job.onResult(result) }
/// let left = await ledger.shutdown(gracePeriod: .seconds(10), count: { $0.shutdownFailures += $1 }) { $0.onResult(.shutdown) }
/// ```
package final class SenderLedger<Job: Sendable, State: Sendable>: Sendable {
    private struct Book: Sendable {
        var pending = PendingJobs<Job>()
        /// The destination share each pending job holds (jobs admitted with a key).
        var keys: [Int: String] = [:]
        var state: State
    }

    /// Backpressure: one slot per admitted job until it is claimed.
    package let window: InFlightWindow
    /// Each destination's bounded share of the window (jobs admitted with a key take a slot of both).
    package let shares: KeyedShares
    private let book: Locked<Book>

    /// - Parameters:
    ///   - capacity: jobs in flight at most (retries and their delays included).
    ///   - perKey: jobs in flight at most to one destination key; at most `capacity` (the default: no share).
    ///   - state: the sender's own counters and trackers, kept under the same lock as the pending jobs.
    package init(capacity: Int, perKey: Int? = nil, state: State) {
        window = InFlightWindow(capacity: capacity)
        shares = KeyedShares(limit: min(perKey ?? capacity, capacity))
        book = Locked(Book(state: state))
    }

    /// Runs `body` on the sender's state under the lock.
    package func withState<Result>(_ body: (inout State) -> Result) -> Result {
        book.withLock { body(&$0.state) }
    }

    /// Takes a slot of `key`'s share (when given) and then a window slot, suspending while either is full, and
    /// registers the job `make` builds for its id. The share comes first: a job waiting for a full destination
    /// holds no window slot, so other destinations' jobs pass it.
    /// A wait for the window ends early when the calling task or `scope` (the job's run) is cancelled.
    /// - Returns: nil (no slot taken, nothing registered) once the window is closed for shutdown, or when the wait
    ///   was cancelled (`scope.isCancelled` tells which).
    package func admit(key: String? = nil, cancelledBy scope: RetryScope? = nil, _ make: (Int) -> Job) async -> Job? {
        if let key {
            guard await shares.acquire(key, cancelledBy: scope) else { return nil }
        }
        guard await window.acquire(cancelledBy: scope) else {
            if let key { shares.release(key) }
            return nil
        }
        return book.withLock { book in
            let job = book.pending.add(make)
            if let key { book.keys[book.pending.lastID] = key }
            return job
        }
    }

    /// Whether job `id` is still unreported (a retry timer checks before sending again).
    package func isPending(_ id: Int) -> Bool {
        book.withLock { $0.pending.contains(id) }
    }

    /// Claims job `id`, runs `count` on the state in the same critical section, then frees the job's slot.
    /// - Returns: false (nothing counted) when the job was claimed already: shutdown reported it.
    package func claim(_ id: Int, count: (inout State) -> Void) -> Bool {
        let (claimed, key) = book.withLock { book -> (Bool, String?) in
            guard book.pending.claim(id) else { return (false, nil) }
            count(&book.state)
            return (true, book.keys.removeValue(forKey: id))
        }
        if claimed {
            window.release()
            if let key { shares.release(key) }
        }
        return claimed
    }

    /// Refuses new jobs, waits up to `gracePeriod` for the admitted ones to be claimed, then claims every
    /// one left (`count` gets the state and how many), frees each one's slot and hands it to `report`.
    /// - Returns: the jobs claimed here, in the order they were admitted.
    package func shutdown(gracePeriod: Duration, count: (inout State, Int) -> Void, report: (Job) -> Void) async
        -> [Job]
    {
        window.close()
        shares.close()
        await window.waitUntilDrained(gracePeriod: gracePeriod)
        let (left, keys) = book.withLock { book -> ([Job], [String]) in
            let left = book.pending.claimAll()
            count(&book.state, left.count)
            defer { book.keys = [:] }
            return (left, Array(book.keys.values))
        }
        for key in keys { shares.release(key) }
        for job in left {
            window.release()
            report(job)
        }
        return left
    }
}
