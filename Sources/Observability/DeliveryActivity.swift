import Foundation
import Locking

/// Notifications per minute for the last hour, per instance: what the console's chart draws.
///
/// A ring of `minutes` one-minute buckets per configured instance, so memory is fixed at start-up whatever the
/// traffic; results for an instance that is not configured are dropped. In memory only: a restart starts an empty
/// hour (the durable numbers are the publishes' counters).
package final class DeliveryActivity: Sendable {
    /// One minute of the series.
    package struct Minute: Sendable, Equatable {
        /// The minute's start.
        package var start: Date
        /// APNs answered 200.
        package var accepted: Int
        /// Anything else: an APNs error, a local rule, no credentials, no answer.
        package var failed: Int
    }

    private struct Bucket {
        /// Minutes since 1970 this bucket holds; a bucket whose minute is not the asked one counts as empty.
        var minute = Int64.min
        var accepted = 0
        var failed = 0
    }

    let minutes: Int
    private let rings: Locked<[String: [Bucket]]>

    /// - Parameters:
    ///   - instanceIDs: the configured instances (compared case-insensitively).
    ///   - minutes: how far back the series goes.
    package init(instanceIDs: [String], minutes: Int = 60) {
        self.minutes = max(1, minutes)
        var rings: [String: [Bucket]] = [:]
        for id in instanceIDs { rings[id.lowercased()] = Array(repeating: Bucket(), count: max(1, minutes)) }
        self.rings = Locked(rings)
    }

    /// Follows the served set (run-time instances): a new instance gets an empty ring, a removed one loses its own,
    /// the others keep theirs.
    package func follow(instanceIDs: [String]) {
        let wanted = Set(instanceIDs.map { $0.lowercased() })
        rings.withLock { rings in
            for id in rings.keys where !wanted.contains(id) { rings[id] = nil }
            for id in wanted where rings[id] == nil { rings[id] = Array(repeating: Bucket(), count: minutes) }
        }
    }

    /// Counts one final result (called from APNs result callbacks: constant time, never blocks for long).
    package func record(instanceID: String, accepted: Bool, at now: Date = Date()) {
        let minute = Self.minute(of: now)
        let slot = Self.slot(minute, count: minutes)
        // Instance ids are lowercase UUIDs already: no lowercased copy (an allocation) per result unless needed.
        // The bytes are scanned in place when the string has them contiguous (a native string does): the UTF-8
        // view's iterator cost about 1,000 instructions per result for a 36-byte id (callgrind, issue 27).
        let needsLowercasing =
            instanceID.utf8.withContiguousStorageIfAvailable { $0.contains(where: Self.isUpperOrNonASCII) }
            ?? instanceID.utf8.contains(where: Self.isUpperOrNonASCII)
        let key = needsLowercasing ? instanceID.lowercased() : instanceID
        rings.withLock { rings in
            guard let index = rings.index(forKey: key) else { return }
            // One lookup, and the ring is modified in place (no copy of it).
            if rings.values[index][slot].minute != minute { rings.values[index][slot] = Bucket(minute: minute) }
            if accepted { rings.values[index][slot].accepted += 1 } else { rings.values[index][slot].failed += 1 }
        }
    }

    @inline(__always)
    private static func isUpperOrNonASCII(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || byte >= 0x80 }

    /// The last `minutes` minutes, oldest first, ending with the current (partial) minute; empty for an unknown
    /// instance.
    package func series(instanceID: String, now: Date = Date()) -> [Minute] {
        let current = Self.minute(of: now)
        guard let ring = rings.withLock({ $0[instanceID.lowercased()] }) else { return [] }
        var out: [Minute] = []
        out.reserveCapacity(minutes)
        for minute in (current - Int64(minutes) + 1)...current {
            let bucket = ring[Self.slot(minute, count: minutes)]
            let start = Date(timeIntervalSince1970: TimeInterval(minute) * 60)
            out.append(
                bucket.minute == minute
                    ? Minute(start: start, accepted: bucket.accepted, failed: bucket.failed)
                    : Minute(start: start, accepted: 0, failed: 0))
        }
        return out
    }

    /// Whole minutes since 1970 (negative before it; `floor`, so a pre-1970 clock still maps to one bucket).
    private static func minute(of date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 1e15 else { return 0 }
        return Int64((seconds / 60).rounded(.down))
    }

    private static func slot(_ minute: Int64, count: Int) -> Int {
        let count = Int64(count)
        return Int(((minute % count) + count) % count)
    }
}
