import Clocks
import Foundation

/// Lets the writer make, for a moment, the one condition under which SQLite can start the WAL over: no read
/// transaction of the store's reader threads open, and no checkpoint running on the checkpoint thread.
///
/// SQLite copies a frame back into the database only once no reader's snapshot still needs an older version of its
/// page, and starts the WAL over only when every frame was copied and no reader holds a snapshot taken from the WAL
/// (a reader that starts once every frame is copied reads the database file alone, and is no obstacle). Readers that
/// overlap without a gap, as the reader threads do under sustained intake, always leave one snapshot behind the
/// latest commit, so neither ever happens and the WAL grows without end. Every read of the store runs on a reader
/// thread, which passes here around each read transaction: the writer waits for the checkpoint thread's copy (it
/// starts no other once the writer's restart is near), closes the gate (new reads wait), waits for the reads in
/// flight, starts the WAL over, and opens the gate again.
///
/// Every wait of the writer ends at a deadline it gives; a reader waits only while the gate is closed, which the
/// writer does for its deadline and one checkpoint at most.
///
/// `@unchecked Sendable`: its fields are only touched while holding `condition` (an `NSCondition`, the waiting form
/// of the pthread mutex, as in `BlockingQueue`: reader threads and the writer block here, not tasks).
final class WALRestartGate: @unchecked Sendable {
    private let condition = NSCondition()
    /// Read transactions in flight on the reader threads.
    private var reading = 0
    /// Whether new read transactions wait.
    private var closed = false
    /// Until when at most: a reader that finds it passed opens the gate itself.
    private var closedUntil = MonotonicInstant(nanoseconds: 0)
    /// Whether the writer closed the gate and has not reopened it (if `closed` is false meanwhile, a reader did).
    private var holding = false
    /// Whether the checkpoint thread is copying frames.
    private var checkpointing = false
    /// Whether the writer wants the checkpoint thread to start no checkpoint (it is about to start the WAL over).
    private var restartPending = false

    init() {}

    /// Called by a reader thread before it begins a read transaction: waits while the gate is closed, until the
    /// time the writer gave at most (then it opens the gate itself, whatever the writer does).
    func enterRead() {
        condition.lock()
        defer { condition.unlock() }
        while closed {
            if closedUntil.hasPassed {
                closed = false
                condition.broadcast()
                break
            }
            _ = wait(until: closedUntil)
        }
        reading += 1
    }

    /// Called by a reader thread once its read transaction ended.
    func leaveRead() {
        condition.lock()
        defer { condition.unlock() }
        reading -= 1
        if reading == 0 { condition.broadcast() }
    }

    /// Called by the checkpoint thread before a checkpoint: `false` while the writer is about to start the WAL over
    /// (its own checkpoint then copies what this one would have; running both would make the writer's fail).
    func beginBackgroundCheckpoint() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if restartPending { return false }
        checkpointing = true
        return true
    }

    /// Called by the checkpoint thread after a checkpoint it was allowed to begin.
    func endBackgroundCheckpoint() {
        condition.lock()
        defer { condition.unlock() }
        checkpointing = false
        condition.broadcast()
    }

    /// Called by the writer after each commit: whether it will soon start the WAL over, so that the checkpoint thread
    /// starts no checkpoint the writer would then have to wait for.
    func restartPending(_ pending: Bool) {
        condition.lock()
        defer { condition.unlock() }
        restartPending = pending
    }

    /// What `holdReadersAndCheckpoints` found.
    enum Hold: Equatable {
        /// Nothing reads from the WAL or copies it now, and nothing will until `reopen()`.
        case held
        /// The checkpoint thread's copy outlasted the deadline. The gate stays open.
        case checkpointRunning
        /// Reads in flight outlasted the deadline; the gate stays closed (until `readersAtMostUntil` of the call that
        /// closed it), for the writer to try again after its next transaction.
        case readsInFlight
        /// Reads in flight outlasted the time new reads may wait; the gate is open again.
        case readsOutlasted
    }

    /// Called by the writer: waits for the checkpoint thread's copy (the checkpoint thread then starts no other until
    /// `restartPending(false)`), closes the gate and waits for the reads in flight, until `deadline` at most. New
    /// reads wait at most until `readersAtMostUntil` of the call that closed the gate, however often the writer
    /// calls again. After `.held` the caller calls `reopen()`.
    func holdReadersAndCheckpoints(
        until deadline: MonotonicInstant, readersAtMostUntil readDeadline: MonotonicInstant
    ) -> Hold {
        condition.lock()
        defer { condition.unlock() }
        restartPending = true
        if holding && !closed {
            // A reader found the gate's time passed and opened it.
            holding = false
            return .readsOutlasted
        }
        if !closed {
            while checkpointing {
                if !wait(until: deadline) { return .checkpointRunning }
            }
            closed = true
            closedUntil = readDeadline
            holding = true
        }
        while reading > 0 {
            if closedUntil.hasPassed {
                closed = false
                holding = false
                condition.broadcast()
                return .readsOutlasted
            }
            if deadline.hasPassed { return .readsInFlight }
            _ = wait(until: min(deadline, closedUntil))
        }
        return .held
    }

    /// Called by the writer after `.held`: the waiting reads go on.
    func reopen() {
        condition.lock()
        defer { condition.unlock() }
        closed = false
        holding = false
        condition.broadcast()
    }

    /// Waits for a broadcast or the deadline (held lock); `false` once the deadline has passed. `NSCondition` waits
    /// for a `Date`, so the monotonic time left becomes one here; the caller looks at its condition again after
    /// each wake-up, and a change of the wall clock at most ends one wait early or late.
    private func wait(until deadline: MonotonicInstant) -> Bool {
        let left = deadline.remaining
        if left == .zero { return false }
        let parts = left.components
        let seconds = Double(parts.seconds) + Double(parts.attoseconds) / 1e18
        _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        return true
    }
}
