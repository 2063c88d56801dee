import Foundation
import Locking
import PushStore

/// One platform's queue inside a running publish: the feeder appends that platform's targets in ref order and a
/// pump hands them to the platform's sender one at a time, suspending while that sender's window is full.
///
/// Why a queue per platform: with one loop submitting every target in turn, an FCM whose window is full would stop
/// APNs deliveries of the same publish at the first Android device. Here a slow platform only fills its own queue;
/// the others keep going until its queue (`capacity` targets) is full too. The bound keeps memory, and what a
/// crash can send again, proportional to the window, not to the publish.
final class PlatformLane: Sendable {
    struct State {
        var queue = FIFO<Target>()
        var closed = false
        /// The queue reached `capacity`: the feeder waits until the pump has taken it down to half (see `enqueue`).
        var full = false
        var count: Int { queue.count }
    }

    /// Targets a pump hands to its sender before it lets the task pool's other work run (`pump`): about half a
    /// millisecond of submissions.
    static let targetsPerTurn = 64

    let capacity: Int
    /// `Settings.maxUncheckpointedResults`.
    let maxWaitingResults: Int
    private let dispatch: any PlatformDispatch
    private let run: PublishRun
    /// A throttled publish's pace (`throttlePerMinute`), shared by its lanes.
    private let pacer: PublishPacer?
    /// The instance's provider budget on this platform (`quotas.notificationsPerMinute`), shared by its runs.
    private let budget: DeliveryBudgets.Budget?
    /// Nothing is handed to the sender from this moment on (`expiresAt`): the run ends `expired`.
    private let expiresAt: Date?
    private let state = WaitableState(State())

    init(
        capacity: Int, maxWaitingResults: Int, dispatch: any PlatformDispatch, run: PublishRun,
        pacer: PublishPacer? = nil, budget: DeliveryBudgets.Budget? = nil, expiresAt: Date? = nil
    ) {
        self.capacity = max(1, capacity)
        self.maxWaitingResults = maxWaitingResults
        self.dispatch = dispatch
        self.run = run
        self.pacer = pacer
        self.budget = budget
        self.expiresAt = expiresAt
    }

    /// Queues `target` (already `submitted` to the run), waiting while the queue is full.
    func enqueue(_ target: consuming Target) async {
        let capacity = capacity
        await state.wait { !$0.full }
        // Moved into the queue, not copied: the target's strings are not retained once more per notification.
        var pending = Optional(target)
        state.update { state in
            if let target = pending.take() { state.queue.append(target) }
            if state.count >= capacity { state.full = true }
        }
    }

    /// No more targets: the pump ends once the queue is empty.
    func close() {
        state.update { $0.closed = true }
    }

    /// Sends the queued targets until the lane is closed and empty. Once the run must stop, what is still queued
    /// is abandoned (not sent; it stays below the checkpoint and goes with the resumed run).
    func pump() async {
        var sinceYield = 0
        while true {
            // A sender with room takes a target without suspending, so a pump with a page queued would hold its
            // task-pool thread (one of one per core) for the whole page; it yields between runs of targets, and
            // the requests and the other publishes queued behind it run in between (issue 25).
            if sinceYield >= Self.targetsPerTurn {
                sinceYield = 0
                await Task.yield()
            }
            sinceYield += 1
            await state.wait { $0.count > 0 || $0.closed }
            // A full queue lets the feeder go on only once half of it is gone: while the sender's window is full,
            // the feeder then wakes once per half a queue instead of once per target the pump takes.
            let resumeAt = capacity / 2
            let next = state.update { state in
                let target = state.queue.popFirst()
                if state.full && state.count <= resumeAt { state.full = false }
                return target
            }
            guard let target = next else { return }
            // Sending pauses while too many results wait for a checkpoint (the store cannot write, say), and for
            // the pacer's token right before the sender: paced here, a stalled sender cannot leave a backlog that
            // leaves in a rush once it recovers.
            // The instance's budget comes last, so a token taken from it is spent at once, not held by a publish
            // waiting for its own throttle.
            guard await run.waitForRoom(limit: maxWaitingResults), await pacer?.waitForToken(run) ?? true,
                await budget?.waitForToken(run) ?? true
            else {
                run.abandoned(target)
                continue
            }
            if let expiresAt, Date() >= expiresAt {
                run.expire()
                run.abandoned(target)
                continue
            }
            await dispatch.send(target)
        }
    }
}
