/// What a publish has counted: devices attempted, accepted and refused per platform and reason, devices removed,
/// broadcast channels' outcomes, the completion estimate. The engine adds to it, the store keeps it, the status API
/// and the console read it, all by `Counter`, never by a spelled-out name; only the stores map it to their rows
/// (`PublishCounters+StoredNames.swift`), under the dotted names every database already holds.
///
/// It behaves like a dictionary of counters: a counter never added is absent (`self[counter]` is nil), which the
/// status API tells apart from 0 for the few fields it shows only when counted.
package struct PublishCounters: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// One counter of a publish.
    package enum Counter: Hashable, Sendable {
        /// Devices (or broadcast channels) the publish was attempted for.
        case targets
        /// The platform's service accepted the notification.
        case accepted(Platform)
        /// The platform's service (or a local rule) refused it, for `reason` (`BadDeviceToken`, `UNREGISTERED`, …).
        case failed(Platform, reason: String)
        /// Devices invalidated because of this publish (410 after the last registration, bad token), every platform.
        case devicesRemoved
        /// Devices of one platform invalidated because of this publish (FCM, Web Push, …; APNs counts only
        /// `devicesRemoved`).
        case devicesRemovedOn(Platform)
        /// Live Activity tokens deleted because of this publish.
        case liveActivityTokensRemoved
        /// APNs requests re-sent to the other environment after a BadDeviceToken on a defaulted environment.
        case environmentRetries
        /// Environment corrections that such a retry confirmed.
        case environmentCorrected
        /// The completion estimate of a running run (docs/API.md, `estimatedCompletionAt`): the targets it has left,
        /// back to 0 when it stops sending. A counter, so a status sums it over the shards several nodes run.
        case estimateRemaining
        /// The rate the run expects, per second × 1000; as `estimateRemaining`.
        case estimateRateMilli
        /// A broadcast publish: channels APNs accepted.
        case channelsAccepted
        /// A broadcast publish: channels refused, for `reason`.
        case channelsFailed(reason: String)
        /// A broadcast publish: the attempts made for one channel (its id).
        case channelAttempts(channel: String)
        /// A broadcast publish: the channel was accepted.
        case channelAccepted(channel: String)
        /// A broadcast publish: the channel was refused, for `reason`.
        case channelFailed(channel: String, reason: String)
        /// A counter this version does not know (written by a newer server): kept, and written back, as stored.
        case unrecognised(String)

        /// The two counters of the completion estimate.
        package static let estimate: [Counter] = [.estimateRemaining, .estimateRateMilli]
    }

    private var values: [Counter: Int64]

    package init() { values = [:] }

    package init(_ values: [Counter: Int64]) { self.values = values }

    package init(dictionaryLiteral elements: (Counter, Int64)...) {
        values = Dictionary(elements, uniquingKeysWith: +)
    }

    /// The counter's value, nil when it was never counted.
    package subscript(_ counter: Counter) -> Int64? {
        get { values[counter] }
        set { values[counter] = newValue }
    }

    /// The counter's value, `defaultValue` when it was never counted.
    package subscript(_ counter: Counter, default defaultValue: Int64) -> Int64 {
        get { values[counter] ?? defaultValue }
        set { values[counter] = newValue }
    }

    package var isEmpty: Bool { values.isEmpty }

    /// Every counted counter with its value, in no particular order.
    package var all: [Counter: Int64] { values }

    /// Adds `amount` to `counter`. Wrapping, never trapping: a hostile sum cannot crash the process (real counters
    /// never come near it).
    package mutating func add(_ counter: Counter, _ amount: Int64 = 1) {
        values[counter, default: 0] &+= amount
    }

    /// Adds every counter of `other`.
    package mutating func add(_ other: PublishCounters) {
        for (counter, amount) in other.values { add(counter, amount) }
    }

    /// Removes the counter. - Returns: its value, nil when it was never counted.
    @discardableResult
    package mutating func remove(_ counter: Counter) -> Int64? { values.removeValue(forKey: counter) }

    /// The counters whose value is not 0 (what a checkpoint has to write).
    package var nonZero: PublishCounters { PublishCounters(values.filter { $0.value != 0 }) }

    // MARK: Reading

    /// `platform`'s refusals by reason.
    package func failures(on platform: Platform) -> [String: Int64] {
        var out: [String: Int64] = [:]
        for (counter, value) in values {
            if case .failed(platform, let reason) = counter { out[reason] = value }
        }
        return out
    }

    /// A broadcast publish's refused channels by reason.
    package var channelFailures: [String: Int64] {
        var out: [String: Int64] = [:]
        for (counter, value) in values {
            if case .channelsFailed(let reason) = counter { out[reason] = value }
        }
        return out
    }

    /// How one channel of a broadcast publish fared.
    package struct ChannelOutcome: Sendable, Equatable {
        /// Nil while it has no answer yet; else whether it was accepted.
        package var accepted: Bool?
        /// The reason it was refused (set with `accepted == false`).
        package var reason: String?
        package var attempts: Int64?
    }

    /// Every channel of a broadcast publish with a counter, by channel id.
    package var channels: [String: ChannelOutcome] {
        var out: [String: ChannelOutcome] = [:]
        for (counter, value) in values {
            switch counter {
            case .channelAttempts(let channel): out[channel, default: ChannelOutcome()].attempts = value
            case .channelAccepted(let channel): out[channel, default: ChannelOutcome()].accepted = true
            case .channelFailed(let channel, let reason):
                out[channel, default: ChannelOutcome()].accepted = false
                out[channel, default: ChannelOutcome()].reason = reason
            default: break
            }
        }
        return out
    }
}
