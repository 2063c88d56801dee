import Locking

/// Tracks a publish's low watermark: the largest target ref such that every target at or below it has a final
/// result. Targets are submitted in ascending ref order, but answers arrive in any order; the watermark only
/// advances over a contiguous prefix of answered targets, so after a crash, resuming from it re-sends at most
/// the targets that were in flight.
///
/// A pure value type, tested without sockets.
package struct CheckpointTracker: Sendable, Equatable {
    /// Every target with `ref <= watermark` has a final result.
    package private(set) var watermark: Int64
    /// Submitted refs in submission (ascending) order, possibly still pending (memory bounded by the in-flight
    /// window, not by the publish size: answered ones leave from the front).
    private var order = FIFO<Int64>(compactAfter: 4096)
    private var pending: Set<Int64> = []
    /// How far the store has been scanned: refs between submitted targets (invalidated devices) count as done.
    private var scanned: Int64

    package init(resumingAfter cursor: Int64) {
        watermark = cursor
        scanned = cursor
    }

    /// Targets submitted and not yet answered.
    package var inFlight: Int { pending.count }

    package mutating func submitted(_ ref: Int64) {
        precondition(ref > (order.last ?? watermark), "targets must be submitted in ascending ref order")
        order.append(ref)
        pending.insert(ref)
    }

    /// The store's page cursor: every ref up to it was either submitted already or is not a target.
    package mutating func scanned(upTo cursor: Int64) {
        scanned = max(scanned, cursor)
        advance()
    }

    package mutating func completed(_ ref: Int64) {
        guard pending.remove(ref) != nil else { return }
        advance()
    }

    private mutating func advance() {
        while let first = order.first, !pending.contains(first) {
            watermark = max(watermark, first)
            _ = order.popFirst()
        }
        if order.isEmpty { watermark = max(watermark, scanned) }
    }
}
