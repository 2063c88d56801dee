import JSON
import PublishEngine
import PushStore

/// The `broadcast` object of a broadcast publish's status: totals and each channel's outcome, read back from the
/// counters `BroadcastFeeder` records.
///
/// ```json
/// {"accepted": 1, "failed": 1, "failedByReason": {"ChannelNotRegistered": 1},
///  "channels": {"<id>": {"status": "accepted", "attempts": 2}, "<id2>": {"status": "failed", "reason": "ChannelNotRegistered", "attempts": 1}}}
/// ```
/// A channel not answered yet is absent from `channels`.
enum BroadcastStatus {
    static func render(_ counters: PublishCounters) -> JSONValue {
        let failures = counters.channelFailures
        var channels: [String: JSONValue] = [:]
        for (id, outcome) in counters.channels {
            guard let accepted = outcome.accepted else { continue }
            var channel: [String: JSONValue] = ["status": .string(accepted ? "accepted" : "failed")]
            if let reason = outcome.reason { channel["reason"] = .string(reason) }
            if let attempts = outcome.attempts { channel["attempts"] = .int(Int(attempts)) }
            channels[id] = .object(channel)
        }
        return .object([
            "accepted": .int(Int(counters[.channelsAccepted] ?? 0)),
            "failed": .int(Int(failures.values.reduce(0, +))),
            "failedByReason": .object(failures.mapValues { .int(Int($0)) }),
            "channels": .object(channels),
        ])
    }
}
