/// The stores' side of `PublishCounters`: the name each counter has in a `publish_counters` row (and in the
/// in-memory store), the dotted names every existing database holds, so a database written before reads the same.
/// Only the stores call these.
///
/// `targets`, `<platform>.accepted`, `<platform>.failed.<Reason>`, `devices.removed`, `<platform>.devicesRemoved`,
/// `liveActivity.tokensRemoved`, `apns.environmentRetries`, `devices.environmentCorrected`, `estimate.remaining`,
/// `estimate.rateMilli`, `broadcast.accepted`, `broadcast.failed.<Reason>` and, per channel,
/// `broadcast.channel.<id>.attempts|accepted|failed.<Reason>` (channel ids are base64, which has no `.`).
extension PublishCounters.Counter {
    /// The counter's stored name.
    package var storedName: String {
        switch self {
        case .targets: "targets"
        case .accepted(let platform): "\(platform.rawValue).accepted"
        case .failed(let platform, let reason): "\(platform.rawValue).failed.\(reason)"
        case .devicesRemoved: "devices.removed"
        case .devicesRemovedOn(let platform): "\(platform.rawValue).devicesRemoved"
        case .liveActivityTokensRemoved: "liveActivity.tokensRemoved"
        case .environmentRetries: "apns.environmentRetries"
        case .environmentCorrected: "devices.environmentCorrected"
        case .estimateRemaining: "estimate.remaining"
        case .estimateRateMilli: "estimate.rateMilli"
        case .channelsAccepted: "broadcast.accepted"
        case .channelsFailed(let reason): "broadcast.failed.\(reason)"
        case .channelAttempts(let channel): "broadcast.channel.\(channel).attempts"
        case .channelAccepted(let channel): "broadcast.channel.\(channel).accepted"
        case .channelFailed(let channel, let reason): "broadcast.channel.\(channel).failed.\(reason)"
        case .unrecognised(let name): name
        }
    }

    /// The counter stored as `name`; `.unrecognised(name)` when no counter of this version is stored so. Read
    /// back, every counter is the one written: a name that parses to a counter whose name differs (a channel id
    /// with a `.`, say) stays unrecognised, so writing it back never renames it.
    package init(storedName name: String) {
        let parsed = Self.parse(name)
        self = parsed.storedName == name ? parsed : .unrecognised(name)
    }

    private static let fixed: [String: Self] = Dictionary(
        uniqueKeysWithValues: ([
            .targets, .devicesRemoved, .liveActivityTokensRemoved, .environmentRetries,
            .environmentCorrected, .estimateRemaining, .estimateRateMilli, .channelsAccepted,
        ]
            + Platform.allCases.flatMap { [Self.accepted($0), .devicesRemovedOn($0)] })
            .map { ($0.storedName, $0) })

    private static func parse(_ name: String) -> Self {
        if let counter = fixed[name] { return counter }
        if let reason = name.dropPrefix("broadcast.failed.") { return .channelsFailed(reason: reason) }
        if let rest = name.dropPrefix("broadcast.channel."), let dot = rest.firstIndex(of: ".") {
            let channel = String(rest[..<dot])
            let field = String(rest[rest.index(after: dot)...])
            if field == "attempts" { return .channelAttempts(channel: channel) }
            if field == "accepted" { return .channelAccepted(channel: channel) }
            if let reason = field.dropPrefix("failed.") { return .channelFailed(channel: channel, reason: reason) }
            return .unrecognised(name)
        }
        for platform in Platform.allCases {
            if let reason = name.dropPrefix("\(platform.rawValue).failed.") { return .failed(platform, reason: reason) }
        }
        return .unrecognised(name)
    }
}

extension PublishCounters {
    /// Counters read from stored rows (name → value).
    package init(storedNames: [String: Int64]) {
        var counters = PublishCounters()
        for (name, value) in storedNames { counters.add(Counter(storedName: name), value) }
        self = counters
    }

    /// The rows to store (name → value).
    package var storedNames: [String: Int64] {
        Dictionary(all.map { ($0.key.storedName, $0.value) }, uniquingKeysWith: +)
    }
}

extension String {
    fileprivate func dropPrefix(_ prefix: String) -> String? {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }
}
