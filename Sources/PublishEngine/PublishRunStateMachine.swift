import PushStore

/// How one publish run ends, as a pure state machine: it takes the run's events (started, paced, stopped, lease
/// lost, fenced, cancelled, expired, fed, checkpointed, the next round known) and answers with the next `Action`
/// for the runner to perform (deliver, checkpoint, finish with a state and summary, hand back, reschedule, end
/// quietly). It performs no I/O and reads no clock, so `PublishRunStateMachineTests` drive every ending without a
/// store, a sender or a socket; `PublishRun` keeps it behind its lock (events arrive on curl threads and on the
/// run's loops) and `PublishRunner` performs its actions.
///
/// Protocol for the runner: report `started(cancelRequested:windowClosed:roundBased:)` and perform its action (`.deliver`,
/// or an ending before anything is sent); after delivery report `fed(complete:)` and write the checkpoint it asks
/// for; report each attempt's outcome with `checkpointed(_:)` and go on with what it returns; after `.reschedule`
/// report `nextRound(known:)`. The other events may arrive at any moment, from any thread.
package struct PublishRunStateMachine: Sendable {
    /// Why sending must end; more than one can hold.
    struct Stops: OptionSet, Sendable {
        let rawValue: UInt8
        /// The engine stops: checkpoint and hand the rest back.
        static let engineStopped = Stops(rawValue: 1 << 0)
        /// Another worker holds the lease: write nothing more.
        static let leaseLost = Stops(rawValue: 1 << 1)
        /// The lease's deadline passed without a newer renewal: the store may have handed the job to another node.
        static let fenced = Stops(rawValue: 1 << 2)
        /// `cancelPublish`, here or through another node: wait for the answers in flight, end `cancelled`.
        static let cancelled = Stops(rawValue: 1 << 3)
        /// The publish's `expiresAt` passed while it ran: end `expired`.
        static let expired = Stops(rawValue: 1 << 4)
    }

    enum Phase: Equatable, Sendable {
        /// Built, not yet started by the runner.
        case idle
        /// Its targets are being fed to the senders (or it waits for a slot to do so).
        case delivering
        /// Delivery ended (`complete`: every target was handed out); the last checkpoint is being written.
        case lastCheckpoint(complete: Bool)
        /// The ending was decided (finish, hand back, reschedule, or nothing when the lease was lost).
        case ending
        /// The runner returned.
        case ended
    }

    /// What the text of a finished publish's summary says (the runner renders it with the plan's window and the
    /// stored counters).
    enum Summary: Equatable, Sendable {
        case cancelled
        /// The window closed before the publish could start.
        case windowClosedBeforeStart
        /// The window closed while it ran; the rest was not sent.
        case windowClosedWhileSending
        /// Every target was handed out, but retries that would have gone out after the window were not sent.
        case windowClosedBeforeRetries
        /// A finished publish: notes from its stored counters (a platform without credentials, say).
        case notes
    }

    /// Why a run gives its job back to the queue unfinished.
    enum HandBack: Equatable, Sendable {
        /// Its lease could not be renewed in time. `releaseLease`: the last checkpoint was written, so the lease
        /// is given up at once; else it runs out.
        case fenced(releaseLease: Bool)
        /// The engine stops (or the store could not write the last results): resumed at the last cursor.
        case paused
    }

    /// What the runner does next.
    enum Action: Equatable, Sendable {
        /// Feed the targets to the senders.
        case deliver
        /// Write the run's waiting results and its watermark (the last checkpoint).
        case checkpoint
        /// Wait the store's retry interval (cut short when the engine stops or the lease is lost), then `.checkpoint`.
        case checkpointAfterPause
        /// End the publish (or this shard of it) as `state`.
        case finish(PublishState, Summary)
        case handBack(HandBack)
        /// A local-time round is done: find the next round's moment and report it with `nextRound(known:)`.
        case reschedule
        /// The lease was lost: another worker owns the job and resumes it from the last checkpoint written here.
        case endQuietly
    }

    private(set) var phase: Phase = .idle
    private(set) var stops: Stops = []
    /// A notification's next retry would have gone out after the publish's `expiresAt` (it ended `Expired`).
    private(set) var retryOutlivedWindow = false
    /// Holds one of the node's publish slots (`PublishSlots`): it may hand targets to the senders.
    private(set) var holdsSlot = false
    /// No lane will hand another target to a sender (every pump returned, or the run never sent).
    private(set) var submissionEnded = false
    /// The publish goes out in local-time rounds: a complete round is rescheduled, not finished.
    private(set) var roundBased = false

    /// Sending must end (the engine stops, the lease is gone or fenced, the publish was cancelled or expired).
    var mustStop: Bool { !stops.isEmpty }
    /// Delivery ended (or never began): the checkpoint, lease and fence loops end.
    var isDelivered: Bool {
        switch phase {
        case .idle, .delivering: return false
        case .lastCheckpoint, .ending, .ended: return true
        }
    }
    var isEnded: Bool { phase == .ended }

    // MARK: Events at any moment

    /// The node's slots granted this run a slot, or took it back when it parked (`PublishSlots`).
    mutating func paced(holdsSlot: Bool) { self.holdsSlot = holdsSlot }
    mutating func engineStopped() { stops.insert(.engineStopped) }
    mutating func leaseLost() { stops.insert(.leaseLost) }
    /// - Returns: whether this fenced the run (false when it was fenced already).
    mutating func fenced() -> Bool { stops.insert(.fenced).inserted }
    mutating func cancelled() { stops.insert(.cancelled) }
    mutating func expired() { stops.insert(.expired) }
    mutating func retryOutlivedTheWindow() { retryOutlivedWindow = true }
    mutating func submissionStopped() { submissionEnded = true }
    /// The runner returned.
    mutating func runEnded() { phase = .ended }

    // MARK: The runner's steps

    /// The runner read the plan. - Parameters:
    ///   - cancelRequested: the stored job was cancelled (while a run that then died held it).
    ///   - windowClosed: its `expiresAt` passed while the server was down or busy.
    ///   - roundBased: it goes out in local-time rounds.
    mutating func started(cancelRequested: Bool, windowClosed: Bool, roundBased: Bool = false) -> Action {
        self.roundBased = roundBased
        if cancelRequested || stops.contains(.cancelled) { return end(.finish(.cancelled, .cancelled)) }
        // Never sent late.
        if windowClosed { return end(.finish(.expired, .windowClosedBeforeStart)) }
        phase = .delivering
        return .deliver
    }

    /// The run ended before delivering anything (it failed, was split into shards, or its shards had all ended).
    mutating func endedBeforeDelivery() { phase = .ending }

    /// Delivery ended. - Parameter complete: every target was handed to a sender (false: stopped on the way).
    mutating func fed(complete: Bool) -> Action {
        phase = .lastCheckpoint(complete: complete)
        return .checkpoint
    }

    /// What became of a checkpoint.
    enum CheckpointOutcome: Equatable, Sendable {
        /// Written, or nothing to write, or the run lost its lease.
        case done
        /// The store could not write; the results are kept for the next attempt.
        case storeUnavailable
        /// Another failure (logged); the results are kept for the next attempt.
        case failed
    }

    /// The last checkpoint was tried. The last results must be stored before the publish ends: while the store
    /// cannot write (a full disk) they are written again, so nothing answered is sent twice or missing from the
    /// counts.
    mutating func checkpointed(_ outcome: CheckpointOutcome) -> Action {
        guard case .lastCheckpoint(let complete) = phase else { return .endQuietly }
        // Another worker owns the job now and resumes it from the last checkpoint this run wrote.
        if stops.contains(.leaseLost) { return end(.endQuietly) }
        let written = outcome != .storeUnavailable
        if !written && !stops.contains(.engineStopped) { return .checkpointAfterPause }
        // Another node may own the job: it goes back to the queue (at once when the store took the checkpoint,
        // else when the lease runs out) and resumes at the last cursor.
        if stops.contains(.fenced) { return end(.handBack(.fenced(releaseLease: outcome == .done))) }
        // Stopped while the store still cannot write: finishing would drop the unwritten results from the counts;
        // handed back, the job resumes at its last cursor and those targets are sent again.
        guard written else { return end(.handBack(.paused)) }
        if stops.contains(.cancelled) { return end(.finish(.cancelled, .cancelled)) }
        if stops.contains(.expired) { return end(.finish(.expired, .windowClosedWhileSending)) }
        // Paused by shutdown: the rest waits in the queue.
        guard complete else { return end(.handBack(.paused)) }
        if retryOutlivedWindow { return end(.finish(.expired, .windowClosedBeforeRetries)) }
        if roundBased { return end(.reschedule) }
        return end(.finish(.finished, .notes))
    }

    /// After `.reschedule`: whether a later local-time round is due (false: every zone had its round).
    mutating func nextRound(known: Bool) -> Action {
        known ? .reschedule : .finish(.finished, .notes)
    }

    private mutating func end(_ action: Action) -> Action {
        phase = .ending
        return action
    }
}
