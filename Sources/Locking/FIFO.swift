/// A first-in-first-out queue with O(1) `popFirst`: an array read from a moving head, compacted once the consumed
/// part is large and at least half of it, so memory follows what is queued. The one FIFO of the project (the
/// store's queues, the fair writer's tenants, an APNs connection's ready jobs, a publish's platform lanes, the
/// checkpoint order, the admission windows' waiters).
///
/// A value without a lock: its owner keeps it under its own. `@inlinable` and `public` (storage `@usableFromInline`;
/// see `Locked` for why `public`) so that an owner in another target gets it specialised for its element type
/// instead of generic calls (a publish's lane appends and pops once per notification).
public struct FIFO<Element> {
    @usableFromInline var items: [Element] = []
    @usableFromInline var head = 0
    /// Consumed slots kept before compacting (and the size below which an emptied buffer keeps its capacity).
    @usableFromInline let compactAfter: Int

    /// - Parameter compactAfter: consumed elements kept before the front is dropped; a larger value copies less
    ///   often, a smaller one holds less memory. Default 1024.
    @inlinable public init(compactAfter: Int = 1024) {
        self.compactAfter = max(1, compactAfter)
    }

    @inlinable public var count: Int { items.count - head }
    @inlinable public var isEmpty: Bool { head == items.count }
    /// The element `popFirst` would return, left in place.
    @inlinable public var first: Element? { head < items.count ? items[head] : nil }
    /// The element queued last.
    @inlinable public var last: Element? { head < items.count ? items.last : nil }

    @inlinable public mutating func append(_ element: Element) { items.append(element) }

    @inlinable public mutating func append<S: Sequence>(contentsOf elements: S) where S.Element == Element {
        items.append(contentsOf: elements)
    }

    /// Puts `element` ahead of every queued one (in the consumed part when there is room: O(1) then).
    @inlinable public mutating func prepend(_ element: Element) {
        if head > 0 {
            head -= 1
            items[head] = element
        } else {
            items.insert(element, at: 0)
        }
    }

    @inlinable public mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head]
        head += 1
        compact()
        return element
    }

    /// Up to `max` elements from the front, in order.
    @inlinable public mutating func popFirst(max: Int) -> [Element] {
        let end = Swift.min(items.count, head + Swift.max(0, max))
        let taken = Array(items[head..<end])
        head = end
        compact()
        return taken
    }

    /// Every element, in order; the queue is left empty.
    @inlinable public mutating func removeAll() -> [Element] {
        let all = Array(items[head...])
        items.removeAll(keepingCapacity: items.count <= compactAfter)
        head = 0
        return all
    }

    @inlinable mutating func compact() {
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= compactAfter)
            head = 0
        } else if head > compactAfter && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
    }
}

extension FIFO: Sendable where Element: Sendable {}

extension FIFO: Equatable where Element: Equatable {
    /// Equal when the same elements are queued in the same order (what was consumed does not count).
    @inlinable public static func == (lhs: FIFO, rhs: FIFO) -> Bool {
        lhs.items[lhs.head...].elementsEqual(rhs.items[rhs.head...])
    }
}
