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
package final class BufferedLogSink: RenderedLogSink, Sendable {
    private enum Item: Sendable {
        case record(LogRecord)
        case records([LogRecord])
        /// Whole lines rendered by the caller (`RenderedLogSink`), and how many.
        case rendered([UInt8], Int)
        /// Signalled once every item queued before it has been written.
        case flush(DispatchSemaphore)
    }

    /// What the producers and the writer share, behind one lock: one lock round per batch handed over.
    private struct State {
        var items: [Item] = []
        /// Records queued and not yet taken by the writer (a batch counts each of its records), held to `capacity`.
        var queued = 0
        /// Records refused since the writer last reported them.
        var dropped = 0
        /// The writer found nothing to do and waits on `wake`: the next producer signals it (once).
        var writerSleeping = false
        var closed = false
    }

    private let state = Locked(State())
    /// The writer's wake-up. Signalled outside the lock and only when the writer sleeps: a producer never wakes a
    /// writer that is busy (it takes the new items on its next round), and a woken writer does not at once block
    /// on the lock its waker still holds.
    private let wake = DispatchSemaphore(value: 0)
    private let capacity: Int
    private let journal: Bool
    private let fd: Int32
    private let maxBatch: Int
    private let stopped = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - fd: where lines go (standard error by default; tests pass a pipe).
    ///   - capacity: records that may wait before new ones are dropped.
    ///   - maxBatch: queued items (a record, or a batch handed over at once) taken per `write(2)` at most.
    package init(
        environment: [String: String] = ProcessInfo.processInfo.environment, fd: Int32 = 2,
        capacity: Int = 65_536, maxBatch: Int = 2_048
    ) {
        self.capacity = max(1, capacity)
        journal = environment["JOURNAL_STREAM"] != nil
        self.fd = fd
        self.maxBatch = max(1, maxBatch)
        NamedThread.start("log-writer") { [self] in drain() }
    }

    package func write(_ record: LogRecord) {
        enqueue(.record(record), records: 1)
    }

    /// Queues `records` as one item: one lock round and at most one wake-up of the writer for the whole batch.
    package func write(contentsOf records: [LogRecord]) {
        guard !records.isEmpty else { return }
        enqueue(.records(records), records: records.count)
    }

    package func makeLineEncoder() -> LogLineEncoder { LogLineEncoder(journal: journal) }

    /// Queues lines rendered with `makeLineEncoder()`: like `write(contentsOf:)`, one queue operation per batch,
    /// and nothing left for the writer but to copy them.
    package func write(renderedLines: [UInt8], count: Int) {
        guard count > 0 else { return }
        enqueue(.rendered(renderedLines, count), records: count)
    }

    /// Queues `item` unless the sink is closed or the item's records do not fit (then they are counted as dropped);
    /// wakes the writer if it sleeps. Flush markers (`records` 0) always fit.
    @discardableResult
    private func enqueue(_ item: Item, records: Int) -> Bool {
        let (queued, wakeWriter) = state.withLock { state -> (Bool, Bool) in
            guard !state.closed, records == 0 || state.queued + records <= capacity else {
                state.dropped += records
                return (false, false)
            }
            state.queued += records
            state.items.append(item)
            guard state.writerSleeping else { return (true, false) }
            state.writerSleeping = false
            return (true, true)
        }
        if wakeWriter { wake.signal() }
        return queued
    }

    /// Blocks until every record written before this call is out. Not for the event loops or the Swift
    /// concurrency pool: call it from the thread that shuts down (after the server stopped).
    package func flush() {
        let done = DispatchSemaphore(value: 0)
        // Refused only once closed: everything is out already.
        guard enqueue(.flush(done), records: 0) else { return }
        done.wait()
    }

    /// Flushes, then stops the writer thread; later records are dropped. Blocking, like `flush()`.
    package func closeNow() {
        flush()
        let wakeWriter = state.withLock { state -> Bool in
            state.closed = true
            defer { state.writerSleeping = false }
            return state.writerSleeping
        }
        if wakeWriter { wake.signal() }
        stopped.wait()
    }

    /// `closeNow()` from async code: the wait happens on a dispatch thread, not on the Swift concurrency pool.
    package func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.closeNow()
                done.resume()
            }
        }
    }

    /// The writer's next round: up to `maxBatch` items and the dropped count to report, or nil once closed and
    /// drained. Waits while there is nothing to do.
    private func nextBatch(into batch: inout [Item]) -> Int? {
        while true {
            let taken = state.withLock { state -> Int? in
                if state.items.isEmpty {
                    if state.closed { return nil }
                    state.writerSleeping = true
                    return -1
                }
                if state.items.count <= maxBatch {
                    // Swapped, not copied: the producers go on appending to the writer's emptied array.
                    swap(&state.items, &batch)
                } else {
                    batch.append(contentsOf: state.items[..<maxBatch])
                    state.items.removeFirst(maxBatch)
                }
                var records = 0
                for item in batch {
                    switch item {
                    case .record: records += 1
                    case .records(let list): records += list.count
                    case .rendered(_, let count): records += count
                    case .flush: break
                    }
                }
                state.queued -= records
                defer { state.dropped = 0 }
                return state.dropped
            }
            guard let taken else { return nil }
            if taken >= 0 { return taken }
            wake.wait()
        }
    }

    private func drain() {
        var encoder = LogLineEncoder(journal: journal)
        var text: [UInt8] = []
        var batch: [Item] = []
        while let lost = nextBatch(into: &batch) {
            text.removeAll(keepingCapacity: text.capacity <= 1 << 20)
            var flushes: [DispatchSemaphore] = []
            if lost > 0 {
                encoder.append(
                    LogRecord(
                        level: .warning, label: "log", message: "Log lines dropped",
                        metadata: [("count", String(lost))]), to: &text)
            }
            for item in batch {
                switch item {
                case .record(let record):
                    encoder.append(record, to: &text)
                case .records(let records):
                    for record in records { encoder.append(record, to: &text) }
                case .rendered(let lines, _):
                    text.append(contentsOf: lines)
                case .flush(let done): flushes.append(done)
                }
            }
            batch.removeAll(keepingCapacity: batch.capacity <= 4096)
            if !text.isEmpty { FileDescriptor.writeAll(fd, text) }
            for done in flushes { done.signal() }
        }
        stopped.signal()
    }
}
