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
/// pauses does not give; once the WAL holds `hardLimitFactor` times the threshold, this thread therefore runs a
/// RESTART checkpoint instead, which holds new writes back while it copies what the passive ones left (little) and
/// starts the WAL over: a stall only under writes without a pause, as SQLite's own checkpoint would have had.
final class WALCheckpointer: Sendable {
    /// A RESTART checkpoint runs once the WAL holds this many times the threshold.
    static let hardLimitFactor = 8

    private let queue = BlockingQueue<Void>()
    /// The WAL's frame count at the latest commit that asked for a checkpoint not yet started (nil: none asked),
    /// so the writer's commits ask once, not once each.
    private let requested = Locked<Int?>(nil)
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
        let hardLimit = threshold * Self.hardLimitFactor
        let thread = Thread { [queue, requested, logger, open, finished] in
            let connection: SQLiteConnection
            do {
                connection = try open()
            } catch {
                logger.warning("The checkpoint connection cannot open; the WAL is copied when the store closes",
                               ["error": "\(error)"])
                finished(nil)
                return
            }
            while !queue.take(max: .max).isEmpty {
                let frames = requested.withLock { requested in
                    defer { requested = nil }
                    return requested ?? 0
                }
                do {
                    try connection.checkpoint(restart: frames >= hardLimit)
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
        guard walFrames >= threshold else { return }
        let ask = requested.withLock { requested in
            defer { requested = walFrames }
            return requested == nil
        }
        if ask { queue.push(()) }
    }

    /// Stops the thread once a requested checkpoint ran; it closes its connection.
    func shutdown() { queue.close() }
}
