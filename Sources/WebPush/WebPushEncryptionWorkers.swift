import Dispatch
import Foundation
import HTTPClient
import Locking

#if canImport(Glibc)
    import Glibc
#endif

/// A few threads that run the per-message RFC 8291 encryption (~0.1 ms of CPU each, docs/BENCHMARKS.md) off the
/// submitting task, so one publish's fan-out uses every core instead of one. Every sender of the process shares
/// `shared` (one thread per core), so many instances do not multiply threads.
///
/// A message goes to the worker its subscription's endpoint hashes to, and each worker is FIFO: messages to one
/// subscription are encrypted and handed to the transport in the order they were submitted, as before. A worker
/// takes everything queued for it at once (one lock and at most one wake-up per batch, not per message), and hands
/// what it encrypted to the transport `handOffBatch` messages at a time, each curl loop woken once per group: the
/// loop then starts them in fewer turns and wake-ups (docs/BENCHMARKS.md, "Web Push: the remaining cost per
/// message" and "Web Push: the whole cost per notification"). The queue
/// is bounded by the sender's window: a message takes its window slot before it is queued. The threads are named
/// `<name>-enc-<n>` so per-thread CPU (bench/swift/FanoutBench) shows the spread; `shared`'s live as long as the
/// process, other pools' (tests) end with `stop()` or when the last reference goes.
final class WebPushEncryptionWorkers: Sendable {
    /// One thread's queue; the thread holds this, not the pool, so the pool's `deinit` can stop it.
    private final class Worker: Sendable {
        struct Inbox {
            var work: [Work] = []
            var stopped = false
        }
        let inbox = Locked(Inbox())
        let wake = DispatchSemaphore(value: 0)

        func run() {
            var handOffs: [() -> Void] = []
            handOffs.reserveCapacity(WebPushEncryptionWorkers.handOffBatch)
            while true {
                wake.wait()
                while true {
                    let (batch, stopped) = inbox.withLock { inbox in
                        defer { inbox.work.removeAll(keepingCapacity: true) }
                        return (inbox.work, inbox.stopped)
                    }
                    for work in batch {
                        if let handOff = work() { handOffs.append(handOff) }
                        if handOffs.count == WebPushEncryptionWorkers.handOffBatch { Self.flush(&handOffs) }
                    }
                    // The rest of the batch goes at once: a short batch never waits for more work.
                    Self.flush(&handOffs)
                    if batch.isEmpty {
                        if stopped { return }
                        break
                    }
                }
            }
        }

        /// Runs the hand-offs with the curl loops' wake-ups put off to the end (`CurlLoopWakeUps`): each loop
        /// they submit to is woken once for the group, not once per turn it takes while they arrive.
        private static func flush(_ handOffs: inout [() -> Void]) {
            guard !handOffs.isEmpty else { return }
            CurlLoopWakeUps.deferred { for handOff in handOffs { handOff() } }
            handOffs.removeAll(keepingCapacity: true)
        }
    }

    /// One queued piece of work: it runs on the worker and returns what to hand on afterwards (nil: nothing), which
    /// the worker runs, in queue order, once up to `handOffBatch` pieces are done or its batch is.
    typealias Work = @Sendable () -> (() -> Void)?

    /// How many encrypted messages a worker hands to the transport at a time (at most; fewer when that is all it
    /// has): the curl loop then starts them in fewer turns and wake-ups (each turn walks every attached transfer),
    /// and the first waits for at most 15 others' encryption (about 1.3 ms), holding its window slot meanwhile.
    /// 16 against 1 and 64 by measurement (docs/BENCHMARKS.md, "Web Push: the remaining cost per message").
    static let handOffBatch = 16

    private let workers: [Worker]

    /// The pool every `WebPushSender` uses: one worker per core, at most 8.
    static let shared = WebPushEncryptionWorkers(
        count: min(8, ProcessInfo.processInfo.activeProcessorCount), name: "webpush")

    /// - Parameters:
    ///   - count: workers, at least 1.
    ///   - name: the sender's name, the threads' prefix.
    init(count: Int, name: String) {
        workers = (0..<max(1, count)).map { index in
            let worker = Worker()
            let threadName = "\(name)-enc-\(index)"
            NamedThread.start(threadName) {
                // Encryption is a fan-out's bulk work: below the request threads (`ThreadPriority`), for the
                // thread's whole life, so lowered even where it could not come back (`BulkPriority`).
                ThreadPriority.lowerCurrentToBulk()
                worker.run()
            }
            return worker
        }
    }

    deinit { stop() }

    /// How many workers there are.
    var count: Int { workers.count }

    /// The worker for `endpoint`: a fixed choice per endpoint within the process.
    func worker(for endpoint: String) -> Int {
        var hasher = Hasher()
        hasher.combine(endpoint)
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(workers.count))
    }

    /// Runs `work` on worker `index` after the work queued there before it, then the hand-off it returns, grouped
    /// with the hand-offs of the pieces run just before and after it (`handOffBatch`); hand-offs keep queue order.
    /// After `stop()` both run at once on the caller's thread, so no work is ever dropped.
    func prepare(on index: Int, _ work: @escaping Work) {
        let worker = workers[index]
        let queued = worker.inbox.withLock { inbox -> Bool? in
            if inbox.stopped { return nil }
            inbox.work.append(work)
            return inbox.work.count == 1  // the worker drains everything per turn: only the first needs a wake-up
        }
        switch queued {
        case nil: work()?()
        case true?: worker.wake.signal()
        case false?: break
        }
    }

    /// Lets each thread finish what is queued and end.
    func stop() {
        for worker in workers {
            let first = worker.inbox.withLock { inbox -> Bool in
                defer { inbox.stopped = true }
                return !inbox.stopped
            }
            if first { worker.wake.signal() }
        }
    }
}
