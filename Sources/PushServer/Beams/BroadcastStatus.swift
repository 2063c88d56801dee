import JSON
import PublishEngine

/// The `broadcast` object of a broadcast publish's status: totals and each channel's outcome, read back from the
/// counters `BroadcastFeeder` records.
///
/// ```json
/// {"accepted": 1, "failed": 1, "failedByReason": {"ChannelNotRegistered": 1},
///  "channels": {"<id>": {"status": "accepted", "attempts": 2}, "<id2>": {"status": "failed", "reason": "ChannelNotRegistered", "attempts": 1}}}
/// ```
/// A channel not answered yet is absent from `channels`.
enum BroadcastStatus {
    static func render(_ counters: [String: Int64]) -> JSONValue {
        typealias Counter = BroadcastFeeder.Counter
        var failedByReason: [String: JSONValue] = [:]
        var failed: Int64 = 0
        var channels: [String: [String: JSONValue]] = [:]
        for (key, value) in counters {
            if key.hasPrefix(Counter.failedPrefix) {
                failedByReason[String(key.dropFirst(Counter.failedPrefix.count))] = .int(Int(value))
                failed += value
            } else if key.hasPrefix(Counter.channelPrefix) {
                let rest = key.dropFirst(Counter.channelPrefix.count)
                // `<id>.accepted`, `<id>.attempts`, `<id>.failed.<Reason>`: ids are base64, which has no `.`.
                guard let dot = rest.firstIndex(of: ".") else { continue }
                let id = String(rest[..<dot])
                let field = rest[rest.index(after: dot)...]
                if field == "accepted" {
                    channels[id, default: [:]]["status"] = .string("accepted")
                } else if field == "attempts" {
                    channels[id, default: [:]]["attempts"] = .int(Int(value))
                } else if field.hasPrefix("failed.") {
                    channels[id, default: [:]]["status"] = .string("failed")
                    channels[id, default: [:]]["reason"] = .string(String(field.dropFirst("failed.".count)))
                }
            }
        }
        return .object([
            "accepted": .int(Int(counters[Counter.accepted] ?? 0)),
            "failed": .int(Int(failed)),
            "failedByReason": .object(failedByReason),
            "channels": .object(channels.filter { $0.value["status"] != nil }.mapValues { .object($0) }),
        ])
    }
}
