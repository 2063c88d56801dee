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
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Hands `job` to the loop thread. Returns false (the job was not taken) once `stop()` was called.
    package func submit(_ job: Driver.Job) -> Bool {
        inbox.withLock { inbox -> Bool in
            if inbox.stop { return false }
            // The loop drains the whole inbox each turn, so only the first job after a drain needs to wake it.
            if inbox.jobs.isEmpty { wakeUp(inbox) }
            inbox.jobs.append(job)
            return true
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
