/// Which claimed webhooks the outbox sends now: the fair-sharing part of `WebhookOutbox`, as a state machine
/// with no clock, store or socket of its own (times are seconds on the caller's monotonic clock).
///
/// - Continuous: the outbox claims whenever `room` is above zero and starts what `next` returns, so one slow
///   attempt holds one slot, never a batch.
/// - Per destination (a URL's scheme, host and port): at most `perDestination` attempts at a time, and at most
///   `heldPerDestination` claimed (queued or running); `add` answers `.deferred` past that, and the outbox puts the
///   webhook back in the store for later without spending an attempt.
/// - Per instance: instances take turns (round robin) for every free slot, so one instance's many webhooks, to one
///   destination or to many, delay another's by at most one turn.
/// - In order: webhooks with the same order key (a publish's `STARTED` and `FINISHED` to its `webhookUrl`) go one
///   after the other, in the order they were added.
/// - Circuit breaker per destination: `breakerThreshold` timeouts (or connection failures) in a row open it for
///   `breakerOpenSeconds`; while open, `next` hands its webhooks back as `.skip` (recorded as a failed attempt,
///   nothing sent); then one trial attempt (half-open) closes it on an answer or opens it again on a timeout.
package struct WebhookScheduler<Item> {
    package struct Settings: Sendable, Equatable {
        /// Attempts in flight at most. Default 32.
        package var concurrency = 32
        /// Attempts in flight to one destination at most. Default 4.
        package var perDestination = 4
        /// Webhooks claimed (queued or running) for one destination at most. Default 16.
        package var heldPerDestination = 16
        /// Timeouts in a row that open a destination's breaker. Default 3.
        package var breakerThreshold = 3
        /// How long an open breaker refuses before its trial attempt, seconds. Default 30.
        package var breakerOpenSeconds = 30.0

        package init(
            concurrency: Int = 32, perDestination: Int = 4, heldPerDestination: Int = 16,
            breakerThreshold: Int = 3, breakerOpenSeconds: Double = 30.0
        ) {
            self.concurrency = concurrency
            self.perDestination = perDestination
            self.heldPerDestination = heldPerDestination
            self.breakerThreshold = breakerThreshold
            self.breakerOpenSeconds = breakerOpenSeconds
        }
    }

    /// What `add` did with a webhook.
    package enum Admission: Equatable {
        case queued
        /// Its destination holds `heldPerDestination` already: put it back for later.
        case deferred
    }

    /// What the outbox does with a webhook `next` hands out.
    package enum Step {
        case send(Item)
        /// The destination's breaker is open: record a failed attempt without sending.
        case skip(Item)
    }

    /// How an attempt ended, for the breaker.
    package enum Result {
        /// Any HTTP answer: the destination is alive.
        case answered
        /// Timed out or could not connect.
        case timedOut
    }

    package enum Breaker: Equatable {
        case closed(timeoutsInARow: Int)
        case open(until: Double)
        case halfOpen(trialRunning: Bool)
    }

    private struct Entry {
        let item: Item
        let destination: String
        let order: String
    }

    let settings: Settings
    private var queues: [String: [Entry]] = [:]
    /// Instances in turn order; `cursor` names the next one to serve.
    private var turns: [String] = []
    private var cursor = 0
    private var running: [String: Int] = [:]
    private var runningOrders: Set<String> = []
    private var held: [String: Int] = [:]
    private var breakers: [String: Breaker] = [:]
    private(set) var runningCount = 0
    package private(set) var heldCount = 0

    package init(settings: Settings = Settings()) {
        var settings = settings
        settings.concurrency = max(1, settings.concurrency)
        settings.perDestination = max(1, settings.perDestination)
        settings.heldPerDestination = max(settings.perDestination, settings.heldPerDestination)
        settings.breakerThreshold = max(1, settings.breakerThreshold)
        self.settings = settings
    }

    /// Webhooks the outbox may claim now: twice the concurrency may be held, so a slot that frees finds the next
    /// webhook in memory.
    package var room: Int { max(0, 2 * settings.concurrency - heldCount) }

    /// Takes a claimed webhook of `instance` for `destination`; `order` keys the webhooks that must not overtake
    /// each other.
    package mutating func add(_ item: Item, instance: String, destination: String, order: String) -> Admission {
        guard held[destination, default: 0] < settings.heldPerDestination else { return .deferred }
        held[destination, default: 0] += 1
        heldCount += 1
        if queues[instance] == nil { turns.append(instance) }
        queues[instance, default: []].append(Entry(item: item, destination: destination, order: order))
        return .queued
    }

    /// The webhooks to handle now: those of open breakers to skip, then sends, one instance's turn at a time,
    /// up to the free slots. Each `.send` must be followed by `finished` once its attempt ends.
    package mutating func next(now: Double) -> [Step] {
        var steps: [Step] = []
        for (destination, breaker) in breakers {
            if case .open(let until) = breaker, until <= now { breakers[destination] = .halfOpen(trialRunning: false) }
        }
        let open = Set(
            breakers.compactMap { destination, breaker -> String? in
                if case .open = breaker { return destination }
                return nil
            })
        if !open.isEmpty {
            for instance in turns {
                guard let queue = queues[instance] else { continue }
                var kept: [Entry] = []
                for entry in queue {
                    if open.contains(entry.destination) {
                        release(entry.destination)
                        steps.append(.skip(entry.item))
                    } else {
                        kept.append(entry)
                    }
                }
                queues[instance] = kept
            }
        }
        var progress = true
        while runningCount < settings.concurrency && progress && !turns.isEmpty {
            progress = false
            for _ in 0..<turns.count where runningCount < settings.concurrency {
                cursor %= turns.count
                let instance = turns[cursor]
                cursor += 1
                if let entry = takeStartable(of: instance) {
                    start(entry)
                    steps.append(.send(entry.item))
                    progress = true
                }
            }
        }
        let idle = turns.filter { queues[$0]?.isEmpty ?? true }
        if !idle.isEmpty {
            for instance in idle { queues[instance] = nil }
            let next = turns.isEmpty ? nil : turns[cursor % turns.count]
            turns.removeAll { idle.contains($0) }
            cursor = next.flatMap { turns.firstIndex(of: $0) } ?? 0
        }
        return steps
    }

    /// An attempt `next` handed out as `.send` ended.
    package mutating func finished(destination: String, order: String, result: Result, now: Double) {
        running[destination, default: 1] -= 1
        if running[destination] == 0 { running[destination] = nil }
        runningOrders.remove(order)
        runningCount -= 1
        release(destination)
        let breaker = breakers[destination] ?? .closed(timeoutsInARow: 0)
        switch (breaker, result) {
        case (_, .answered):
            breakers[destination] = nil  // closed, no timeouts: forgotten
        case (.closed(let timeouts), .timedOut):
            breakers[destination] =
                timeouts + 1 >= settings.breakerThreshold
                ? .open(until: now + settings.breakerOpenSeconds) : .closed(timeoutsInARow: timeouts + 1)
        case (.halfOpen, .timedOut):
            breakers[destination] = .open(until: now + settings.breakerOpenSeconds)
        case (.open, .timedOut):
            break  // an attempt started before the breaker opened
        }
    }

    /// The breaker of `destination` (closed when never seen).
    package func breaker(_ destination: String) -> Breaker { breakers[destination] ?? .closed(timeoutsInARow: 0) }

    /// When the earliest open breaker lets a trial through: the outbox wakes then for its queued webhooks.
    package var nextBreakerTrial: Double? {
        breakers.values.compactMap { breaker -> Double? in
            if case .open(let until) = breaker { return until }
            return nil
        }.min()
    }

    // MARK: - Private

    private mutating func takeStartable(of instance: String) -> Entry? {
        guard let queue = queues[instance] else { return nil }
        var blockedOrders: Set<String> = []
        for (index, entry) in queue.enumerated() {
            defer { blockedOrders.insert(entry.order) }
            guard !blockedOrders.contains(entry.order), !runningOrders.contains(entry.order),
                running[entry.destination, default: 0] < settings.perDestination
            else { continue }
            switch breakers[entry.destination] {
            case .open, .halfOpen(trialRunning: true): continue
            case .halfOpen(trialRunning: false): breakers[entry.destination] = .halfOpen(trialRunning: true)
            case .closed, nil: break
            }
            queues[instance]?.remove(at: index)
            return entry
        }
        return nil
    }

    private mutating func start(_ entry: Entry) {
        running[entry.destination, default: 0] += 1
        runningOrders.insert(entry.order)
        runningCount += 1
    }

    private mutating func release(_ destination: String) {
        held[destination, default: 1] -= 1
        if held[destination] == 0 { held[destination] = nil }
        heldCount -= 1
    }
}
