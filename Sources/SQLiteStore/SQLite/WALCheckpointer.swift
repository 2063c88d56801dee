import CSQLite
import Clocks
import Foundation
import Locking
import Logging

/// Copies the WAL back into the database on a thread and connection of its own, so the writer never waits for it.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that crosses `wal_autocheckpoint`, on the committing
/// connection: the store's single writer, with every queued write behind it. A checkpoint ends in `fdatasync`s of
/// the WAL and the database, which on a busy disk took 50–700 ms (strace of the soak, docs/BENCHMARKS.md "Soak"),
/// and as a fan-out grows it rewrites more pages per second, so checkpoints come more often: the tail of every
/// write (registration, subscription, intake) grew with it. Here the writer's WAL hook only signals (`walGrew`),
/// and this thread runs a PASSIVE checkpoint, which never blocks the writer or the readers. With `synchronous`
/// NORMAL the writer then never syncs at all.
///
/// The WAL stays bounded: once a checkpoint has copied every frame, the writer's next transaction starts the WAL
/// over, unless a read transaction then still holds a snapshot taken from the WAL (one that begins once every frame
/// is copied reads the database file alone). A writer that never pauses gives no moment when every frame is copied,
/// and read transactions that overlap without a gap (the reader threads under sustained intake) always leave one
/// snapshot older than the latest commit, so no PASSIVE checkpoint copies every frame: the WAL never started over
/// (51 MB after one `bench/publish/intake.sh`). Once the WAL holds `restartFactor` times the threshold, the writer
/// therefore starts it over itself between two transactions (`restart`): it holds new reads of the reader threads back
/// (`WALRestartGate`; every read of the store runs there), waits for the reads in flight, runs a RESTART checkpoint on
/// its own connection, which copies what this thread has not and starts the WAL over, and lets the reads go on.
///
/// The writer's wait is bounded: at most `restartWait(frames:)`, a few milliseconds at `restartFactor` and more as the
/// WAL nears `hardLimitFactor` times the threshold (`maxRestartWait` at most). When reads in flight outlast it (a
/// reader thread descheduled on a busy machine), the gate stays closed and the writer tries again after its next
/// transaction, with the same bound; new reads wait at most `maxReadWait` for one restart, then go on. This thread's copies (their syncs took
/// 50–700 ms on a busy disk) are out of its way: from one threshold before the restart this thread starts none, and
/// the writer's RESTART copies what is left; a copy still running when the writer's wait ends makes it try again
/// after its next transaction. A RESTART from this thread would hold every write back while it waited for readers:
/// under an interest flood that was a 100–230 ms stall for every instance's writes (`bench/noisy/run.sh`).
/// After a restart that failed because a read of the reader threads outlasted `maxReadWait`, the writer tries again
/// once the time it may wait in one has passed; when a connection outside the reader threads reads (an export,
/// another process), or past the hard limit, it waits twice that after a second failure in a row and so on
/// (`maxBackoffFactor`), so a snapshot held for long costs the writer and the reads a small share of their time.
///
/// So while every read transaction is shorter than `maxReadWait`, the WAL file stays within `hardLimitFactor` times
/// the threshold in pages (32 MB at the default 1,000 pages of 4 KiB), unless one group transaction alone writes more
/// than the distance between the two factors, or a copy of this thread or the RESTART's own syncs last as long as
/// the writer takes to write that much.
final class WALCheckpointer: Sendable {
    /// The writer starts the WAL over itself (`restart`) once it holds this many times the threshold.
    static let restartFactor = 4
    /// The WAL's documented bound, in times the threshold (docs/OPERATIONS.md).
    static let hardLimitFactor = 8
    /// What the writer waits for readers and the checkpoint thread just past `restartFactor`.
    static let minRestartWait: Duration = .milliseconds(4)
    /// What it waits at most, from `hardLimitFactor` on.
    static let maxRestartWait: Duration = .milliseconds(40)
    /// How long new reads wait at most for one restart: while reads in flight outlast the writer's wait, the gate
    /// stays closed across the writer's next transactions, for this long at most.
    static let maxReadWait: Duration = .milliseconds(100)
    /// After failed restarts the pause before the next one grows to at most this many times the wait.
    static let maxBackoffFactor = 32

    private let queue = BlockingQueue<Void>()
    /// The WAL's frame count at the latest commit that asked for a checkpoint not yet started (nil: none asked),
    /// so the writer's commits ask once, not once each.
    private let requested = Locked<Int?>(nil)
    /// The WAL's frame count at the latest commit.
    private let latestFrames = Locked(0)
    private let threshold: Int
    private let gate: WALRestartGate
    private let busyTimeout: Duration
    private let restarts = Locked(RestartState())
    private let logger: Logger
    private let open: @Sendable () throws -> SQLiteConnection
    private let finished: @Sendable ((any Error)?) -> Void

    /// `start()` runs the thread. `open` runs on it and makes its read-write connection; `finished` runs last.
    /// `gate` is the one the reader threads pass; `busyTimeout` the writer connection's, set back after its RESTART.
    init(
        thresholdFrames: Int, gate: WALRestartGate, busyTimeout: Duration, logger: Logger,
        open: @escaping @Sendable () throws -> SQLiteConnection,
        finished: @escaping @Sendable ((any Error)?) -> Void
    ) {
        threshold = max(1, thresholdFrames)
        self.gate = gate
        self.busyTimeout = busyTimeout
        self.logger = logger
        self.open = open
        self.finished = finished
    }

    /// Starts the thread (once the database is in WAL mode). A checkpointer never started must still be shut down:
    /// `finished` then never runs.
    func start() {
        // "store-checkpoint" is 16 bytes, one over the kernel's limit for a thread name.
        NamedThread.start("store-wal", stackSize: 1 << 20) {
            [queue, requested, gate, restarts, logger, open, finished] in
            let connection: SQLiteConnection
            do {
                connection = try open()
            } catch {
                logger.warning(
                    "The checkpoint connection cannot open; the WAL is copied when the store closes",
                    ["error": "\(error)"])
                finished(nil)
                return
            }
            while !queue.take(max: .max).isEmpty {
                requested.withLock { $0 = nil }
                // The writer is starting the WAL over; its checkpoint copies what this one would.
                guard gate.beginBackgroundCheckpoint() else { continue }
                let started = MonotonicInstant.now
                do {
                    try connection.checkpoint(restart: false)
                } catch {
                    // A failing disk is reported by the writes themselves; the next commit asks again.
                    logger.debug("Checkpoint failed", ["error": "\(error)"])
                }
                gate.endBackgroundCheckpoint()
                let took = started.duration(to: .now)
                restarts.withLock { $0.statistics.longestCopy = max($0.statistics.longestCopy, took) }
            }
            do {
                try connection.close()
                finished(nil)
            } catch {
                finished(error)
            }
        }
    }

    /// Called on the writer after each commit with the WAL's frame count: asks for a checkpoint past the
    /// threshold (cheap; never waits).
    func onCommit(walFrames: Int) {
        latestFrames.withLock { $0 = walFrames }
        // From one threshold before the writer's restart, this thread starts no copy the writer would wait for: what
        // it leaves is copied by the writer's RESTART.
        gate.restartPending(walFrames >= threshold * (Self.restartFactor - 1))
        guard walFrames >= threshold else { return }
        let ask = requested.withLock { requested in
            defer { requested = walFrames }
            return requested == nil
        }
        if ask { queue.push(()) }
    }

    /// Called on the writer between two transactions with its connection: past `restartFactor` times the threshold,
    /// starts the WAL over (`restart`), unless a restart failed a moment ago.
    func catchUp(on connection: SQLiteConnection) {
        let frames = latestFrames.withLock { $0 }
        let due = restarts.withLock { $0.holdingSince != nil || $0.notBefore.hasPassed }
        guard frames >= threshold * Self.restartFactor, due else { return }
        restart(on: connection, frames: frames)
    }

    /// How long the writer waits for readers and the checkpoint thread with `frames` in the WAL: `minRestartWait` at
    /// `restartFactor` times the threshold, rising in a straight line to `maxRestartWait` at `hardLimitFactor` times.
    func restartWait(frames: Int) -> Duration {
        let start = threshold * Self.restartFactor
        let span = threshold * (Self.hardLimitFactor - Self.restartFactor)
        let past = min(max(frames - start, 0), span)
        let extra = Self.maxRestartWait - Self.minRestartWait
        return Self.minRestartWait + extra * (Double(past) / Double(span))
    }

    /// Holds the reader threads and this thread back, waits for the reads in flight (at most `restartWait`), and runs
    /// a RESTART checkpoint, which copies the rest of the WAL and starts it over: the writer's next transaction writes
    /// from its beginning. The RESTART itself waits for readers of other connections (an export, another process)
    /// only for what is left of that time. While this thread copies, nothing happens until the next call.
    private func restart(on connection: SQLiteConnection, frames: Int) {
        let started = MonotonicInstant.now
        let deadline = started + restartWait(frames: frames)
        var failure: (any Error)?
        let hold = gate.holdReadersAndCheckpoints(
            until: deadline, readersAtMostUntil: started + Self.maxReadWait)
        let heldAfter = started.duration(to: .now)
        switch hold {
        case .checkpointRunning:
            // Not a failure: this thread starts no other copy now, so the next transaction's try finds it done.
            restarts.withLock { $0.statistics.deferredRestarts += 1 }
            return
        case .readsInFlight:
            // New reads stay held back; the reads in flight get one more transaction's time to end.
            restarts.withLock { state in
                state.statistics.longestHold = max(state.statistics.longestHold, heldAfter)
                if state.holdingSince == nil { state.holdingSince = started }
            }
            return
        case .readsOutlasted:
            failure = WALRestartTimeout()
        case .held:
            do {
                try connection.restartCheckpoint(waitingAtMost: deadline.remaining, thenBusyTimeout: busyTimeout)
            } catch {
                failure = error
            }
            gate.reopen()
        }
        let waited = started.duration(to: .now)
        restarts.withLock { state in
            let closedFor = (state.holdingSince ?? started).duration(to: .now)
            state.holdingSince = nil
            state.statistics.longestReadWait = max(state.statistics.longestReadWait, closedFor)
            state.statistics.longestRestart = max(state.statistics.longestRestart, waited)
            state.statistics.longestHold = max(state.statistics.longestHold, heldAfter)
            if failure == nil {
                state.statistics.restarts += 1
                state.failuresInARow = 0
            } else {
                state.statistics.failedRestarts += 1
                if hold == .readsOutlasted { state.statistics.timedOutRestarts += 1 }
                state.failuresInARow += 1
                // After reads of the reader threads outlasted it, below the hard limit, the next try comes once as
                // much time has passed as the writer may wait in one (so it waits at most half its time; the
                // RESTART's copy and syncs are not waiting, and what it copied stays copied). Otherwise (a snapshot
                // held long outside the reader threads: an export, another process; or past the hard limit) the
                // pause doubles with each failure in a row, and the reads held back meanwhile with it.
                let ours = hold == .readsOutlasted && frames < threshold * Self.hardLimitFactor
                let factor = ours ? 1 : min(1 << min(state.failuresInARow - 1, 20), Self.maxBackoffFactor)
                state.notBefore = .now + started.duration(to: deadline) * factor
            }
        }
        if let failure {
            logger.debug("The WAL did not start over", ["frames": String(frames), "error": "\(failure)"])
        } else {
            // Until the next commit reports the WAL's length again.
            latestFrames.withLock { $0 = 0 }
        }
    }

    /// How often the writer started the WAL over itself, for tests and benchmarks.
    var statistics: WALStatistics { restarts.withLock { $0.statistics } }

    /// Stops the thread once a requested checkpoint ran; it closes its connection.
    func shutdown() { queue.close() }
}

/// What the writer's restarts of the WAL did (`WALCheckpointer.restart`).
package struct WALStatistics: Sendable, Equatable {
    /// RESTART checkpoints of the writer that started the WAL over.
    package var restarts = 0
    /// Ones that did not: a read or a checkpoint outlasted the wait, or a connection of another process read.
    package var failedRestarts = 0
    /// Of those, the ones where a read of the reader threads outlasted the wait.
    package var timedOutRestarts = 0
    /// Times the writer found the checkpoint thread copying and tried again after its next transaction.
    package var deferredRestarts = 0
    /// The longest PASSIVE checkpoint of the checkpoint thread (its copy and syncs).
    package var longestCopy: Duration = .zero
    /// The longest time the writer waited in one for the reads and the checkpoint in flight (bounded by
    /// `WALCheckpointer.maxRestartWait`, plus the time it takes the thread to run again after the wait).
    package var longestHold: Duration = .zero
    /// The longest time the reader threads' new reads were held back for one (at most
    /// `WALCheckpointer.maxReadWait`, plus the time it takes the threads to run again).
    package var longestReadWait: Duration = .zero
    /// The longest time the writer spent in one: that wait, and the RESTART checkpoint (its copy, its syncs, and
    /// its wait for connections of other processes, bounded by what was left of the same time).
    package var longestRestart: Duration = .zero
}

/// The writer's restarts and when it may try the next one.
private struct RestartState {
    var statistics = WALStatistics()
    var failuresInARow = 0
    /// When the writer closed the gate for a restart still waiting for reads in flight (`.readsInFlight`).
    var holdingSince: MonotonicInstant?
    var notBefore = MonotonicInstant(nanoseconds: 0)
}

/// The reads in flight outlasted the writer's wait for a restart.
private struct WALRestartTimeout: Error, CustomStringConvertible {
    var description: String { "reads in flight outlasted the wait" }
}
