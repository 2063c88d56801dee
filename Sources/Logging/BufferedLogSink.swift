import Foundation
import Locking

/// Writes log lines to standard error from a thread of its own, many lines per `write(2)`.
///
/// Why: the access log writes one line per request from the HTTP event loops. Formatting the line (a timestamp,
/// logfmt quoting) and a `write(2)` per line on the loop cost the server most of its throughput on small requests
/// (docs/BENCHMARKS.md, HTTP). Here `write` only enqueues the record; the writer thread formats everything queued
/// and writes it with one system call.
///
/// Bounded: at most `capacity` records wait. When the writer falls behind (a blocked journal, a paused terminal),
/// new records are dropped and counted instead of growing memory or blocking an event loop, and the writer
/// reports the count in a `Log lines dropped` warning once it catches up.
///
/// Nothing is lost on a clean shutdown: `flush()` returns once every record written before it is out, and
/// `close()` flushes and stops the thread. A crash (kill -9) can lose what is still queued, at most `capacity`
/// lines — the cost of not writing on the event loop.
public final class BufferedLogSink: LogSink, Sendable {
    private enum Item: Sendable {
        case record(LogRecord)
        /// Signalled once every item queued before it has been written.
        case flush(DispatchSemaphore)
    }

    private let queue: BlockingQueue<Item>
    private let dropped = Locked(0)
    private let journal: Bool
    private let fd: Int32
    private let maxBatch: Int
    private let stopped = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - fd: where lines go (standard error by default; tests pass a pipe).
    ///   - capacity: records that may wait before new ones are dropped.
    ///   - maxBatch: records formatted into one `write(2)` at most.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment, fd: Int32 = 2,
                capacity: Int = 65_536, maxBatch: Int = 2_048) {
        queue = BlockingQueue(capacity: capacity)
        journal = environment["JOURNAL_STREAM"] != nil
        self.fd = fd
        self.maxBatch = max(1, maxBatch)
        let thread = Thread { [self] in drain() }
        thread.name = "log-writer"
        thread.start()
    }

    public func write(_ record: LogRecord) {
        if !queue.push(.record(record)) {
            dropped.withLock { $0 += 1 }
        }
    }

    /// Blocks until every record written before this call is out. Not for the event loops or the Swift
    /// concurrency pool: call it from the thread that shuts down (after the server stopped).
    public func flush() {
        let done = DispatchSemaphore(value: 0)
        guard queue.push(.flush(done), evenIfFull: true) else { return }  // closed: everything is out already
        done.wait()
    }

    /// Flushes, then stops the writer thread; later records are dropped. Blocking, like `flush()`.
    public func closeNow() {
        flush()
        queue.close()
        stopped.wait()
    }

    /// `closeNow()` from async code: the wait happens on a dispatch thread, not on the Swift concurrency pool.
    public func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.closeNow()
                done.resume()
            }
        }
    }

    private func drain() {
        while true {
            let batch = queue.take(max: maxBatch)
            if batch.isEmpty { break }  // closed and drained
            var text = ""
            var flushes: [DispatchSemaphore] = []
            let lost = dropped.withLock { count -> Int in
                defer { count = 0 }
                return count
            }
            if lost > 0 {
                text += LogFormat.line(LogRecord(level: .warning, label: "log", message: "Log lines dropped",
                                                 metadata: [("count", String(lost))]), journal: journal)
            }
            for item in batch {
                switch item {
                case .record(let record): text += LogFormat.line(record, journal: journal)
                case .flush(let done): flushes.append(done)
                }
            }
            if !text.isEmpty { FileDescriptor.writeAll(fd, text) }
            for done in flushes { done.signal() }
        }
        stopped.signal()
    }
}
