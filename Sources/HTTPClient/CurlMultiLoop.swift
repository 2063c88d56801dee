import CLibCurl
import Foundation
import Locking

/// The loop-thread side of a `CurlMultiLoop`: what to do with handed-over jobs and finished transfers. Every
/// method runs on the loop's thread, one at a time; the driver owns its easy handles and attaches them to `multi`.
/// (`SendableMetatype`: the loop thread's closure captures the driver's type, never an instance from elsewhere.)
package protocol CurlMultiDriver: AnyObject, SendableMetatype {
    /// A unit of work handed over from other threads.
    associatedtype Job: Sendable
    /// What `stop()` returns once the loop has exited (say, the requests left unanswered).
    associatedtype Leftover: Sendable

    /// Before each `curl_multi_perform`: `jobs` arrived since the last turn (oldest first; often none). Start
    /// whatever is due.
    func prepare(_ jobs: [Job], multi: CurlMulti)
    /// After `curl_multi_perform` (which ran the transfers' callbacks), before finished transfers are reported.
    /// `error` when the perform call itself failed.
    func performed(_ error: CurlError?, multi: CurlMulti)
    /// curl ended the transfer on `easy` with `code`; the loop has already detached the handle from `multi`.
    func ended(_ easy: UnsafeMutableRawPointer, code: CURLcode, multi: CurlMulti)
    /// After a turn: how long to wait for the network before the next one, in milliseconds (0: go on at once).
    func pollTimeout() -> Int32
    /// The loop is stopping: abort everything (detach every handle still attached), fail `unstarted` (jobs that
    /// arrived after the last turn), and say what is left. The loop frees the multi handle afterwards.
    func abort(unstarted: [Job], multi: CurlMulti) -> Leftover
}

extension BulkPriority {
    /// A sender's loop runs at bulk priority while it carries a fan-out's worth of transfers (32 at once) and goes
    /// back once down to 4: one instance's campaign then yields the CPU to the request threads (issue 25), and a
    /// connection carrying a few transactional pushes keeps normal priority.
    package static let sender = BulkPriority(enterAt: 32, leaveAt: 4)
}

/// The loops a thread owes a wake-up while it hands over a group of jobs (`CurlLoopWakeUps.deferred`).
protocol DeferredWakeUp: AnyObject {
    func wakeUpIfQueued()
}

extension CurlMultiLoop: DeferredWakeUp {}

/// Hand-overs in groups: inside `deferred`, the jobs a thread submits to `CurlMultiLoop`s wait in their inboxes and
/// each loop that needs it is woken once when the block ends, instead of by the group's first job, with the loop
/// then taking the rest in further turns (each turn walks every attached transfer; libcurl 7.88). The Web Push
/// encryption workers hand over what they encrypted this way (docs/BENCHMARKS.md, "Web Push: the whole cost per
/// notification"). Per thread (a `pthread` key): other threads' submits wake as usual.
package enum CurlLoopWakeUps {
    /// This thread's open blocks and the loops they owe a wake-up (touched by its own thread only).
    private final class Pending {
        var depth = 0
        var loops: [any DeferredWakeUp] = []
    }

    private static let key: pthread_key_t? = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { box in
            if let box { Unmanaged<Pending>.fromOpaque(box).release() }
        }
        return created == 0 ? key : nil
    }()

    /// This thread's record, made on first use; nil without a `pthread` key (then nothing is deferred).
    private static func pending(creating: Bool) -> Pending? {
        guard let key else { return nil }
        if let box = pthread_getspecific(key) { return Unmanaged<Pending>.fromOpaque(box).takeUnretainedValue() }
        guard creating else { return nil }
        let pending = Pending()
        let box = Unmanaged.passRetained(pending)
        guard pthread_setspecific(key, box.toOpaque()) == 0 else {
            box.release()
            return nil
        }
        return pending
    }

    /// Whether the calling thread is inside `deferred`.
    static var isDeferring: Bool { (pending(creating: false)?.depth ?? 0) > 0 }

    /// Records that `loop` needs a wake-up at the end of the calling thread's outermost `deferred` block.
    static func owe(_ loop: any DeferredWakeUp) {
        guard let pending = pending(creating: false), pending.depth > 0 else { return loop.wakeUpIfQueued() }
        if !pending.loops.contains(where: { $0 === loop }) { pending.loops.append(loop) }
    }

    /// Runs `body`, putting off the wake-ups of the loops it submits jobs to until it returns (or throws); nested
    /// blocks wake at the end of the outermost. Keep `body` short: the jobs wait until it ends.
    package static func deferred<Result>(_ body: () throws -> Result) rethrows -> Result {
        guard let pending = pending(creating: true) else { return try body() }
        pending.depth += 1
        defer {
            pending.depth -= 1
            if pending.depth == 0 && !pending.loops.isEmpty {
                let loops = pending.loops
                pending.loops.removeAll(keepingCapacity: true)
                for loop in loops { loop.wakeUpIfQueued() }
            }
        }
        return try body()
    }
}

/// One curl multi handle driven by its own thread, with a locked inbox that other threads hand jobs through and
/// `curl_multi_wakeup` to interrupt its poll: the one curl loop of the process (each APNs connection and the
/// webhook client run one each). The driver decides what the jobs and transfers mean.
///
/// ```swift
/// let loop = CurlMultiLoop(name: "webhooks-0", multi: try CurlMulti(), driver: driver)
/// loop.start()
/// _ = loop.submit(job)          // any thread; false once stopping
/// let leftover = await loop.stop()
/// ```
///
/// @unchecked Sendable: `multi` and `driver` are touched only by the loop thread once `start()` ran (and by
/// nobody after it exited), except `multi.wakeUp()`, which curl allows from any thread and which is only called
/// under the inbox lock while `stopping` is false (the loop sets it under the same lock before it frees the multi).
package final class CurlMultiLoop<Driver: CurlMultiDriver>: @unchecked Sendable {
    private struct Inbox {
        var jobs: [Driver.Job] = []
        /// `stop()` was called: refuse new jobs.
        var stop = false
        /// The loop saw `stop`; it frees the multi next, so nobody may wake it any more.
        var stopping = false
    }

    private let name: String
    private let multi: CurlMulti
    private let driver: Driver
    /// When the loop's thread runs at bulk priority (`BulkPriority`); nil: always at normal priority.
    private let bulkPriority: BulkPriority?
    private let inbox = Locked(Inbox())
    /// The driver's leftover, set once the thread has exited; `stop()` callers wait for it.
    private let finished = WaitableState<Driver.Leftover?>(nil)

    /// Takes ownership of `multi` and `driver`; nothing runs until `start()`. `bulkPriority`: when the thread runs
    /// below normal OS priority (nil: never).
    package init(
        name: String, multi: CurlMulti, driver: Driver, bulkPriority: BulkPriority? = .sender
    ) {
        self.name = name
        self.multi = multi
        self.driver = driver
        self.bulkPriority = bulkPriority
    }

    /// Starts the loop thread. Call once.
    package func start() {
        NamedThread.start(name) { [self] in run() }
    }

    /// Hands `job` to the loop thread. Returns false (the job was not taken) once `stop()` was called. Inside
    /// `CurlLoopWakeUps.deferred` on this thread the loop is woken when that block ends, not here.
    package func submit(_ job: Driver.Job) -> Bool {
        let deferring = CurlLoopWakeUps.isDeferring
        // nil: refused; true: this job needs a wake-up the deferring block owes.
        let owed = inbox.withLock { inbox -> Bool? in
            if inbox.stop { return nil }
            // The loop drains the whole inbox each turn, so only the first job after a drain needs to wake it.
            let first = inbox.jobs.isEmpty
            inbox.jobs.append(job)
            guard first else { return false }
            if deferring { return true }
            wakeUp(inbox)
            return false
        }
        guard let owed else { return false }
        if owed { CurlLoopWakeUps.owe(self) }
        return true
    }

    /// Wakes the loop if jobs are waiting in its inbox (a wake-up `CurlLoopWakeUps.deferred` put off; none when
    /// the loop took them meanwhile).
    func wakeUpIfQueued() {
        inbox.withLock { inbox in
            if !inbox.jobs.isEmpty { wakeUp(inbox) }
        }
    }

    /// Stops the loop (the driver aborts what is running) and waits for its thread to exit; returns the driver's
    /// leftover. Idempotent: later calls return the same leftover.
    /// The wait ignores cancellation: the thread exits promptly, and the caller needs what it left.
    package func stop() async -> Driver.Leftover {
        inbox.withLock { inbox in
            if !inbox.stop { wakeUp(inbox) }
            inbox.stop = true
        }
        while true {
            await finished.waitIgnoringCancellation(until: { $0 != nil })
            if let leftover = finished.read({ $0 }) { return leftover }
        }
    }

    /// Interrupts the loop's poll. Called under the inbox lock, so the multi cannot be freed meanwhile.
    private func wakeUp(_ inbox: Inbox) {
        guard !inbox.stopping else { return }
        // Fails only on a handle that is not a multi: nothing a caller could do; the poll still ends at its timeout.
        try? multi.wakeUp()
    }

    // MARK: - Loop thread

    private func run() {
        var unstarted: [Driver.Job] = []
        var priority = bulkPriority
        while true {
            let (jobs, stop) = inbox.withLock { inbox -> ([Driver.Job], Bool) in
                let jobs = inbox.jobs
                inbox.jobs = []
                if inbox.stop { inbox.stopping = true }
                return (jobs, inbox.stop)
            }
            if stop {
                unstarted = jobs
                break
            }
            driver.prepare(jobs, multi: multi)
            var failure: CurlError?
            do {
                let running = try multi.perform()
                priority?.follow(load: running)
            } catch {
                failure = error
            }
            driver.performed(failure, multi: multi)
            while let done = multi.nextDone() {
                // Only fails for a handle that is not attached: it is detached either way.
                try? multi.remove(handle: done.easy)
                driver.ended(done.easy, code: done.code, multi: multi)
            }
            let timeout = driver.pollTimeout()
            // A failed poll (out of memory) returns at once; the next turn tries again.
            if timeout > 0 { try? multi.poll(timeoutMilliseconds: timeout) }
        }
        let leftover = driver.abort(unstarted: unstarted, multi: multi)
        multi.close()
        finished.update { $0 = leftover }
    }
}
