import CSQLite
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
/// over. That needs a moment between two write transactions when every frame is copied, which a writer that never
/// pauses does not give. Once the WAL holds `hardLimitFactor` times the threshold, the writer therefore makes that
/// moment itself: between two transactions it runs a PASSIVE checkpoint on its own connection (`catchUp`), which
/// copies only what this thread's checkpoints have not (little) and waits for no reader, and its next transaction
/// starts the WAL over. A RESTART checkpoint from this thread would do the same but hold every write back while it
/// waited for readers: under an interest flood that was a 100–230 ms stall for every instance's writes
/// (`bench/noisy/run.sh`), where the writer's own checkpoint costs a few milliseconds.
final class WALCheckpointer: Sendable {
    /// The writer checkpoints itself (`catchUp`) once the WAL holds this many times the threshold.
    static let hardLimitFactor = 8

    private let queue = BlockingQueue<Void>()
    /// The WAL's frame count at the latest commit that asked for a checkpoint not yet started (nil: none asked),
    /// so the writer's commits ask once, not once each.
    private let requested = Locked<Int?>(nil)
    /// The WAL's frame count at the latest commit.
    private let latestFrames = Locked(0)
    private let threshold: Int
    private let logger: Logger
    private let open: @Sendable () throws -> SQLiteConnection
    private let finished: @Sendable ((any Error)?) -> Void

    /// `start()` runs the thread. `open` runs on it and makes its read-write connection; `finished` runs last.
    init(
        thresholdFrames: Int, logger: Logger, open: @escaping @Sendable () throws -> SQLiteConnection,
        finished: @escaping @Sendable ((any Error)?) -> Void
    ) {
        threshold = max(1, thresholdFrames)
        self.logger = logger
        self.open = open
        self.finished = finished
    }

    /// Starts the thread (once the database is in WAL mode). A checkpointer never started must still be shut down:
    /// `finished` then never runs.
    func start() {
        let thread = Thread { [queue, requested, logger, open, finished] in
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
                do {
                    try connection.checkpoint(restart: false)
                } catch {
                    // A failing disk is reported by the writes themselves; the next commit asks again.
                    logger.debug("Checkpoint failed", ["error": "\(error)"])
                }
            }
            do {
                try connection.close()
                finished(nil)
            } catch {
                finished(error)
            }
        }
        thread.name = "store-checkpoint"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Called on the writer after each commit with the WAL's frame count: asks for a checkpoint past the
    /// threshold (cheap; never waits).
    func onCommit(walFrames: Int) {
        latestFrames.withLock { $0 = walFrames }
        guard walFrames >= threshold else { return }
        let ask = requested.withLock { requested in
            defer { requested = walFrames }
            return requested == nil
        }
        if ask { queue.push(()) }
    }

    /// Called on the writer between two transactions with its connection: past the hard limit, copies what is left
    /// of the WAL (PASSIVE, so no reader is waited for), after which the writer's next transaction starts the WAL
    /// over. Busy (this thread is checkpointing) or failing, it leaves it to the next call.
    func catchUp(on connection: SQLiteConnection) {
        guard latestFrames.withLock({ $0 }) >= threshold * Self.hardLimitFactor else { return }
        do {
            try connection.checkpoint(restart: false)
            // Until the next commit reports the WAL started over, do not run again.
            latestFrames.withLock { $0 = 0 }
        } catch {
            logger.debug("Writer checkpoint did not run", ["error": "\(error)"])
        }
    }

    /// Stops the thread once a requested checkpoint ran; it closes its connection.
    func shutdown() { queue.close() }
}
