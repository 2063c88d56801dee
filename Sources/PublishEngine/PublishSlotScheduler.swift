/// Which claimed publish runs next on this node: the engine's publish slots as a pure state machine (events in,
/// the runs granted a slot out), tested without a store or a clock.
///
/// A slot is the permission to hand targets to the senders. A claimed run is in one of three places:
/// - **holding** a slot (it sends);
/// - **waiting** for one, in its instance's queue;
/// - **parked**: it waits for something that is not a slot (a paced publish's next token) and holds none, up to
///   `maxParked` runs; beyond that a run that would park keeps its slot, as every run did before.
///
/// Fairness:
/// - Across instances, waiting runs are granted in weighted round robin (deficit round robin with a unit cost per
///   grant): each turn an instance gets up to `weight` grants, so one instance's many publishes (resumed paced
///   batches included) cannot keep another's waiting.
/// - Within an instance, `.small` runs go before `.bulk` ones, and small runs have `expressSlots` of their own on
///   top of `slots`: a one-user publish starts even while every regular slot carries a huge publish.
/// - With `instanceFloor`, an instance holding no slot is granted one even when every slot is taken (a *floor*
///   slot, on top of `slots` and `expressSlots`): another instance's publishes, however many and however slow,
///   cannot keep its first publish waiting. At most one floor slot per instance, so at most `slots +
///   expressSlots` runs plus one per instance with a run here hold a slot at once.
package struct PublishSlotScheduler<Key: Hashable & Sendable>: Sendable {
    /// How a run competes for slots.
    package enum Lane: Sendable, Equatable {
        /// A publish known to be small from its claim (a users publish to a few users): first in its instance's
        /// queue, and may use an express slot.
        case small
        /// Anything else (an interests publish of unknown size, a paced publish).
        case bulk
    }

    /// Where a run is.
    package enum Place: Sendable, Equatable {
        case holding
        case waiting
        case parked
    }

    /// Which kind of slot a holding run has.
    package enum Slot: Sendable, Equatable {
        case regular
        /// One of the express slots (only `.small` runs take them).
        case express
        /// Its instance's floor slot (`instanceFloor`): granted because the instance held no slot.
        case floor
    }

    private struct Run {
        var instance: String
        var lane: Lane
        var place: Place
        /// The slot it holds while `.holding`.
        var slot: Slot = .regular
    }

    private struct InstanceQueue {
        var small: [Key] = []
        var bulk: [Key] = []
        var deficit = 0
        var isEmpty: Bool { small.isEmpty && bulk.isEmpty }
    }

    /// Regular slots (`engine.concurrentPublishes`).
    let slots: Int
    /// Extra slots only small runs use.
    let expressSlots: Int
    /// Most runs parked at once.
    let maxParked: Int
    /// Grants per round-robin turn, by instance id; 1 when absent.
    var weights: [String: Int]
    /// Whether an instance holding no slot gets a floor slot when every other slot is taken.
    let instanceFloor: Bool

    private var runs: [Key: Run] = [:]
    private var queues: [String: InstanceQueue] = [:]
    /// Instances with waiting runs, in round-robin order; `cursor` is the one whose turn it is.
    private var order: [String] = []
    private var cursor = 0
    package private(set) var regularHeld = 0
    package private(set) var expressHeld = 0
    package private(set) var floorHeld = 0
    /// Slots held, by instance (entries at 0 removed).
    private var heldByInstance: [String: Int] = [:]
    package private(set) var parkedCount = 0
    package private(set) var waitingCount = 0

    package init(
        slots: Int, expressSlots: Int = 0, maxParked: Int = 0, weights: [String: Int] = [:],
        instanceFloor: Bool = false
    ) {
        self.slots = max(1, slots)
        self.expressSlots = max(0, expressSlots)
        self.maxParked = max(0, maxParked)
        self.weights = weights
        self.instanceFloor = instanceFloor
    }

    /// Where `key` is; nil when it is unknown (never admitted, or removed).
    package func place(of key: Key) -> Place? { runs[key]?.place }

    /// The slot `key` holds; nil unless it is holding one.
    package func slot(of key: Key) -> Slot? {
        guard let run = runs[key], run.place == .holding else { return nil }
        return run.slot
    }

    /// Whether the node should claim another publish: nothing waits here for a slot, and a slot is free for at
    /// least a small run. (A claimed bulk run that finds only an express slot free waits for a regular one; no
    /// other claim is made until it has one, so a node never hoards more than one job it cannot run.)
    package var wantsClaim: Bool {
        waitingCount == 0 && (regularHeld < slots || expressHeld < expressSlots)
    }

    /// Whether the node should claim a publish of an instance with no run here, although `wantsClaim` is false:
    /// such a run gets its instance's floor slot at once (`instanceFloor`).
    package var wantsFloorClaim: Bool { instanceFloor && !wantsClaim }

    /// A claimed run joins its instance's queue. - Returns: the runs granted a slot (it may be one of them).
    package mutating func admit(_ key: Key, instance: String, lane: Lane) -> [Key] {
        guard runs[key] == nil else { return [] }
        runs[key] = Run(instance: instance, lane: lane, place: .waiting)
        enqueue(key, instance: instance, lane: lane)
        return grant()
    }

    /// A holding run stops sending for a while (its next paced token is due later): it gives its slot up, unless
    /// `maxParked` runs are parked already. - Returns: whether it parked, and the runs granted its slot.
    package mutating func park(_ key: Key) -> (parked: Bool, granted: [Key]) {
        guard var run = runs[key], run.place == .holding, parkedCount < maxParked else { return (false, []) }
        releaseSlot(of: run)
        run.place = .parked
        run.slot = .regular
        runs[key] = run
        parkedCount += 1
        return (true, grant())
    }

    /// A parked run wants to send again: it joins its instance's queue (behind the runs already waiting there).
    /// - Returns: the runs granted a slot (it may be one of them).
    package mutating func resume(_ key: Key) -> [Key] {
        guard var run = runs[key], run.place == .parked else { return [] }
        run.place = .waiting
        runs[key] = run
        parkedCount -= 1
        enqueue(key, instance: run.instance, lane: run.lane)
        return grant()
    }

    /// The run ended (or will never send again): whatever it held or waited for goes. - Returns: the runs granted
    /// the slot it freed.
    package mutating func remove(_ key: Key) -> [Key] {
        guard let run = runs.removeValue(forKey: key) else { return [] }
        switch run.place {
        case .holding:
            releaseSlot(of: run)
        case .parked:
            parkedCount -= 1
        case .waiting:
            waitingCount -= 1
            queues[run.instance]?.small.removeAll { $0 == key }
            queues[run.instance]?.bulk.removeAll { $0 == key }
            if queues[run.instance]?.isEmpty == true { dropInstance(run.instance) }
        }
        return grant()
    }

    // MARK: Granting

    private mutating func enqueue(_ key: Key, instance: String, lane: Lane) {
        if queues[instance] == nil {
            queues[instance] = InstanceQueue()
            // Joins at the end of the turn order; an instance alone gets its turn at once.
            order.append(instance)
            if order.count == 1 {
                cursor = 0
                let quantum = weight(instance)
                queues[instance]?.deficit = quantum
            }
        }
        switch lane {
        case .small: queues[instance]?.small.append(key)
        case .bulk: queues[instance]?.bulk.append(key)
        }
        waitingCount += 1
    }

    private mutating func releaseSlot(of run: Run) {
        switch run.slot {
        case .regular: regularHeld -= 1
        case .express: expressHeld -= 1
        case .floor: floorHeld -= 1
        }
        let held = (heldByInstance[run.instance] ?? 1) - 1
        heldByInstance[run.instance] = held > 0 ? held : nil
    }

    private func weight(_ instance: String) -> Int { max(1, weights[instance] ?? 1) }

    /// Hands free slots to waiting runs until none is free or nobody waiting can use one, then floor slots to the
    /// waiting instances that hold none.
    private mutating func grant() -> [Key] {
        var granted: [Key] = []
        while waitingCount > 0 {
            let regularFree = regularHeld < slots
            let expressFree = expressHeld < expressSlots
            let slot: Slot
            let instance: String
            if regularFree || expressFree, let next = nextInstance(bulkAllowed: regularFree) {
                instance = next
                // A small run takes an express slot first, keeping the regular ones for runs that need them.
                slot = queues[next]?.small.isEmpty == false && expressFree ? .express : .regular
            } else if let bare = instanceHoldingNoSlot() {
                instance = bare
                slot = .floor
            } else {
                break
            }
            var queue = queues[instance] ?? InstanceQueue()
            let key = queue.small.isEmpty ? queue.bulk.removeFirst() : queue.small.removeFirst()
            queues[instance] = queue
            waitingCount -= 1
            switch slot {
            case .regular: regularHeld += 1
            case .express: expressHeld += 1
            case .floor: floorHeld += 1
            }
            heldByInstance[instance, default: 0] += 1
            runs[key]?.place = .holding
            runs[key]?.slot = slot
            granted.append(key)
            if queue.isEmpty { dropInstance(instance) }
        }
        return granted
    }

    /// With `instanceFloor`, the first instance in turn order, from the current one, that has a run waiting and
    /// holds no slot; it does not use up the instance's turn.
    private func instanceHoldingNoSlot() -> String? {
        guard instanceFloor, !order.isEmpty else { return nil }
        for step in 0..<order.count {
            let instance = order[(cursor + step) % order.count]
            if heldByInstance[instance] == nil, queues[instance]?.isEmpty == false { return instance }
        }
        return nil
    }

    /// The instance whose waiting run goes next: the current one while its turn lasts (`deficit`), else the next in
    /// the order, which starts its turn with `weight` grants. Instances with nothing that can use the free slots
    /// (only bulk runs while only express slots are free) are passed over. Nil when none can.
    private mutating func nextInstance(bulkAllowed: Bool) -> String? {
        guard !order.isEmpty else { return nil }
        // One full turn round the order visits every instance once more.
        for _ in 0...order.count {
            let instance = order[cursor]
            if let queue = queues[instance], queue.deficit > 0, !queue.small.isEmpty || bulkAllowed {
                queues[instance]?.deficit -= 1
                return instance
            }
            advance()
        }
        return nil
    }

    private mutating func advance() {
        cursor = (cursor + 1) % order.count
        let next = order[cursor]
        let quantum = weight(next)
        queues[next]?.deficit = quantum
    }

    /// An instance with nothing waiting leaves the order; the next one starts its turn when it was this one's.
    private mutating func dropInstance(_ instance: String) {
        guard let index = order.firstIndex(of: instance) else { return }
        queues[instance] = nil
        order.remove(at: index)
        guard !order.isEmpty else {
            cursor = 0
            return
        }
        if index < cursor {
            cursor -= 1
        } else if index == cursor {
            cursor %= order.count
            let next = order[cursor]
            let quantum = weight(next)
            queues[next]?.deficit = quantum
        }
    }
}
