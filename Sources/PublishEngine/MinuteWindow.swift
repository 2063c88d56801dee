/// A count of events over the last 60 seconds, in one-second buckets: what a provider budget let through in the
/// last minute on this node, for the console's quotas panel. Fixed memory; a pure value, driven by the caller's
/// clock (whole seconds of `MonotonicClock`).
package struct MinuteWindow: Sendable, Equatable {
    static let seconds = 60

    /// The second each bucket counts; a bucket holding an older second counts as empty.
    private var stamps = [Int64](repeating: .min, count: MinuteWindow.seconds)
    private var counts = [Int](repeating: 0, count: MinuteWindow.seconds)

    package init() {}

    /// Counts `count` events at `second`.
    package mutating func add(_ count: Int = 1, at second: Int64) {
        let slot = Self.slot(second)
        if stamps[slot] != second {
            stamps[slot] = second
            counts[slot] = 0
        }
        counts[slot] += count
    }

    /// The events counted in the 60 seconds up to and including `second`.
    package func total(at second: Int64) -> Int {
        var sum = 0
        for slot in 0..<Self.seconds where stamps[slot] <= second && stamps[slot] > second - Int64(Self.seconds) {
            sum += counts[slot]
        }
        return sum
    }

    private static func slot(_ second: Int64) -> Int {
        let count = Int64(seconds)
        return Int(((second % count) + count) % count)
    }
}
