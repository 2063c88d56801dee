import Foundation
import Locking

/// Writes log lines to standard error from a thread of its own, many lines per `write(2)`.
///
/// Why: the access log writes one line per request from the HTTP event loops. Formatting the line (a timestamp,
/// logfmt quoting) and a `write(2)` per line on the loop cost the server most of its throughput on small requests
/// (docs/BENCHMARKS.md, HTTP). Here `write` only enqueues the record; the writer thread formats everything queued
/// (`LogLineEncoder`: bytes, no intermediate strings) and writes it with one system call. The event loops hand
/// their access-log lines over in batches, rendered on the loop (`write(renderedLines:count:)`, one queue operation
/// per batch).
///
/// Bounded: at most `capacity` records wait. When the writer falls behind (a blocked journal, a paused terminal),
/// new records are dropped and counted instead of growing memory or blocking an event loop, and the writer
/// reports the count in a `Log lines dropped` warning once it catches up.
///
/// Nothing is lost on a clean shutdown: `flush()` returns once every record written before it is out, and
/// `close()` flushes and stops the thread. A crash (kill -9) can lose what is still queued, at most `capacity`
/// lines — the cost of not writing on the event loop.
public final class BufferedLogSink: RenderedLogSink, Sendable {
    private enum Item: Sendable {
        case record(LogRecord)
        case records([LogRecord])
        /// Whole lines rendered by the caller (`RenderedLogSink`), and how many.
        case rendered([UInt8], Int)
        /// Signalled once every item queued before it has been written.
        case flush(DispatchSemaphore)
    }

    private let queue: BlockingQueue<Item>
    private let dropped = Locked(0)
    /// Records queued and not yet taken by the writer (a batch counts each of its records), held to `capacity`.
    private let queued = Locked(0)
    private let capacity: Int
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
        // The queue is unbounded in items; `queued` bounds the records, which is what costs memory.
        queue = BlockingQueue()
        self.capacity = max(1, capacity)
        journal = environment["JOURNAL_STREAM"] != nil
        self.fd = fd
        self.maxBatch = max(1, maxBatch)
        let thread = Thread { [self] in drain() }
        thread.name = "log-writer"
        thread.start()
    }

    public func write(_ record: LogRecord) {
        guard admit(1) else { return }
        if !queue.push(.record(record)) { retract(1) }
    }

    /// Queues `records` as one item: one lock round and at most one wake-up of the writer for the whole batch.
    public func write(contentsOf records: [LogRecord]) {
        guard !records.isEmpty, admit(records.count) else { return }
        if !queue.push(.records(records)) { retract(records.count) }
    }

    public func makeLineEncoder() -> LogLineEncoder { LogLineEncoder(journal: journal) }

    /// Queues lines rendered with `makeLineEncoder()`: like `write(contentsOf:)`, one queue operation per batch,
    /// and nothing left for the writer but to copy them.
    public func write(renderedLines: [UInt8], count: Int) {
        guard count > 0, admit(count) else { return }
        if !queue.push(.rendered(renderedLines, count)) { retract(count) }
    }

    /// Reserves room for `count` records, or counts them as dropped.
    private func admit(_ count: Int) -> Bool {
        let room = queued.withLock { queued -> Bool in
            guard queued + count <= capacity else { return false }
            queued += count
            return true
        }
        if !room { dropped.withLock { $0 += count } }
        return room
    }

    /// A push refused after `admit` (the sink is closed): the records are dropped.
    private func retract(_ count: Int) {
        queued.withLock { $0 -= count }
        dropped.withLock { $0 += count }
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
        var encoder = LogLineEncoder(journal: journal)
        var text: [UInt8] = []
        while true {
            let batch = queue.take(max: maxBatch)
            if batch.isEmpty { break }  // closed and drained
            text.removeAll(keepingCapacity: text.capacity <= 1 << 20)
            var flushes: [DispatchSemaphore] = []
            var taken = 0
            let lost = dropped.withLock { count -> Int in
                defer { count = 0 }
                return count
            }
            if lost > 0 {
                encoder.append(LogRecord(level: .warning, label: "log", message: "Log lines dropped",
                                         metadata: [("count", String(lost))]), to: &text)
            }
            for item in batch {
                switch item {
                case .record(let record):
                    encoder.append(record, to: &text)
                    taken += 1
                case .records(let records):
                    for record in records { encoder.append(record, to: &text) }
                    taken += records.count
                case .rendered(let lines, let count):
                    text.append(contentsOf: lines)
                    taken += count
                case .flush(let done): flushes.append(done)
                }
            }
            if taken > 0 { queued.withLock { $0 -= taken } }
            if !text.isEmpty { FileDescriptor.writeAll(fd, text) }
            for done in flushes { done.signal() }
        }
        stopped.signal()
    }
}
