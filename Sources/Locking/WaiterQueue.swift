/// The waiters of an admission window (a sender's in-flight window, a destination's share, an APNs pool), first in
/// first out, where a waiter can also leave early: its task was cancelled, or the run it sends for was.
///
/// A value kept under its window's lock. Leaving early needs a ticket known before the waiter is queued, since a
/// cancellation can arrive before the waiter's continuation exists (a task cancelled already runs its cancellation
/// handler first). So a waiter `reserve`s a ticket, then either `settle`s it (admitted at once), or `enqueue`s
/// itself under it, which fails when `cancel` came first. Every set here holds only tickets of waiters that have
/// not yet left, so nothing grows with the number of waits.
///
/// `public` and `@inlinable` for `AdmissionWindow`, whose specialised `acquire` works on it in the caller's module.
public struct WaiterQueue<Element> {
    /// Identifies one waiter.
    public typealias Ticket = UInt64

    @usableFromInline var entries: [Ticket: Element] = [:]
    /// Tickets in arrival order; cancelled ones stay until they reach the front (or a clean-up drops them).
    @usableFromInline var order = FIFO<Ticket>()
    @usableFromInline var lastTicket: Ticket = 0
    /// Reserved, neither settled nor queued yet.
    @usableFromInline var reserved: Set<Ticket> = []
    /// Reserved tickets whose waiter was cancelled before it queued.
    @usableFromInline var cancelledEarly: Set<Ticket> = []

    @inlinable
    public init() {}

    /// Waiters queued now.
    @inlinable
    public var count: Int { entries.count }
    @inlinable
    public var isEmpty: Bool { entries.isEmpty }

    /// Tickets still in line, cancelled ones included (tests check it stays near `count`).
    package var lineLength: Int { order.count }

    /// A ticket for a waiter about to look for room.
    @inlinable
    public mutating func reserve() -> Ticket {
        lastTicket &+= 1
        reserved.insert(lastTicket)
        return lastTicket
    }

    /// The waiter was admitted without queueing (or gave up): its ticket is forgotten.
    @inlinable
    public mutating func settle(_ ticket: Ticket) {
        reserved.remove(ticket)
        cancelledEarly.remove(ticket)
    }

    /// Queues `element` under `ticket`. - Returns: false (nothing queued, ticket forgotten) when the waiter was
    /// cancelled before it got here: answer it as cancelled.
    @inlinable
    public mutating func enqueue(_ element: Element, ticket: Ticket) -> Bool {
        reserved.remove(ticket)
        if cancelledEarly.remove(ticket) != nil { return false }
        entries[ticket] = element
        order.append(ticket)
        return true
    }

    /// Whether the waiter with this reserved ticket was cancelled before it queued (it must not take a slot).
    @inlinable
    public func isCancelledEarly(_ ticket: Ticket) -> Bool { cancelledEarly.contains(ticket) }

    /// The waiter with `ticket` leaves. - Returns: its element when it was queued (the caller answers it as
    /// cancelled); nil when it is not queued yet (it will find out in `enqueue`) or left already.
    @inlinable
    public mutating func cancel(_ ticket: Ticket) -> Element? {
        if let element = entries.removeValue(forKey: ticket) {
            compactIfIdle()
            return element
        }
        if reserved.contains(ticket) { cancelledEarly.insert(ticket) }
        return nil
    }

    /// The longest-queued waiter, which leaves the queue.
    @inlinable
    public mutating func popFirst() -> Element? {
        while let ticket = order.popFirst() {
            if let element = entries.removeValue(forKey: ticket) {
                compactIfIdle()
                return element
            }
        }
        return nil
    }

    /// Every queued waiter, longest-queued first; the queue is left empty.
    @inlinable
    public mutating func removeAll() -> [Element] {
        var all: [Element] = []
        while let element = popFirst() { all.append(element) }
        return all
    }

    /// Drops cancelled tickets from the line when they outnumber the waiters, so it stays proportional to them.
    @inlinable
    mutating func compactIfIdle() {
        if entries.isEmpty {
            _ = order.removeAll()
        } else if order.count > 2 * entries.count + 1024 {
            let waiting = order.removeAll().filter { entries[$0] != nil }
            order.append(contentsOf: waiting)
        }
    }
}

extension WaiterQueue: Sendable where Element: Sendable {}
