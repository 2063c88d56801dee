import JSON
import PushStore

/// A Live Activity push of a publish (docs/API.md "Publishing to Live Activities"): the `x_live_activity` member
/// (which activities) plus `apns.aps` checked against ActivityKit's payload rules, with `timestamp` set by the
/// server. Pure: no clock, no store; the caller passes the intake time.
///
/// The rules are the ones the strict mock APNs applies (Tests/Support/apns_rules.py): `event` start|update|end,
/// `content-state` an object (required for start and update), `attributes-type` + `attributes` + `alert` for
/// start, `dismissal-date` only with end, the whole payload at most 4096 bytes.
public struct LiveActivityPayload: Sendable, Equatable {
    /// `aps.event`.
    package enum Event: String, Sendable, CaseIterable {
        case start, update, end
    }

    /// The publish-body member that makes a publish a Live Activity publish.
    package static let member = "x_live_activity"
    /// APNs' payload limit for `liveactivity` pushes.
    package static let maxPayloadBytes = 4096
    /// Longest `input-push-channel` (a base64 channel id), in bytes.
    package static let maxChannelIDBytes = 128
    /// The `apns-push-type` of every Live Activity push.
    package static let pushType = "liveactivity"
    /// Keys `aps` may carry in a Live Activity push; anything else (`content-available`, `sound`, `badge`, …) is
    /// refused, because ActivityKit ignores it and it usually means the publisher built an ordinary notification.
    package static let apsKeys: Set<String> = [
        "timestamp", "event", "content-state", "attributes-type", "attributes", "alert", "stale-date",
        "dismissal-date", "relevance-score", "input-push-token", "input-push-channel",
    ]

    package var event: Event
    /// Which ActivityKit type the targeted tokens belong to.
    package var attributesType: String
    /// Update/end only: just the activity with this id; nil for every running activity of the type.
    package var activityID: String?
    /// 5 (default: does not draw on the activity's update budget) or 10 (only when asked).
    package var priority: Int
    /// The payload's `aps`, `timestamp` included.
    package var aps: [String: JSONValue]
    /// Custom top-level payload keys (`apns` members other than Beams' own, and `apns.data` as `data`),
    /// forwarded unchanged. Never Beams' `data.pusher`.
    package var extra: [String: JSONValue]

    package init(
        event: Event, attributesType: String, activityID: String? = nil, priority: Int = 5,
        aps: [String: JSONValue], extra: [String: JSONValue] = [:]
    ) {
        self.event = event
        self.attributesType = attributesType
        self.activityID = activityID
        self.priority = priority
        self.aps = aps
        self.extra = extra
    }

    /// `apns-topic` of a Live Activity push for an app.
    package static func topic(bundleID: String) -> String { "\(bundleID).push-type.liveactivity" }

    /// The APNs JSON body, the same for every token of the publish.
    package func payload() -> [UInt8] {
        var root = extra
        root["aps"] = .object(aps)
        return JSONValue.object(root).serialized()
    }

    /// Validates a publish's `x_live_activity` member and its `apns` part, and stamps `aps.timestamp`.
    /// - Parameters:
    ///   - member: the `x_live_activity` value as sent.
    ///   - apns: the parsed `apns` part; nil when the publish has none (refused: the push needs `apns.aps`).
    ///   - timestamp: the intake time in epoch seconds.
    /// - Throws: `BeamsError` 422 with a backticked path naming the offending field.
    package static func parse(member: JSONValue, apns: APNsTemplate?, timestamp: Int) throws(BeamsError)
        -> LiveActivityPayload
    {
        let path = Self.member
        guard let object = member.objectValue else {
            throw .schema(path, PublishRequest.typeMessage("object", member))
        }
        for key in object.keys.sorted() where !["attributesType", "activityId", "priority"].contains(key) {
            throw .schema("\(path).\(key.prefix(64))", "Unknown member; allowed: attributesType, activityId, priority")
        }
        guard let typeValue = object["attributesType"], !typeValue.isNull else {
            throw .schema("\(path).attributesType", "attributesType is required")
        }
        guard let attributesType = typeValue.stringValue else {
            throw .schema("\(path).attributesType", PublishRequest.typeMessage("string", typeValue))
        }
        guard LiveActivityToken.isValidAttributesType(attributesType) else {
            throw .schema("\(path).attributesType", attributesTypeRule)
        }
        var activityID: String?
        if let value = object["activityId"], !value.isNull {
            guard let string = value.stringValue else {
                throw .schema("\(path).activityId", PublishRequest.typeMessage("string", value))
            }
            guard LiveActivityToken.isValidPrintable(string, maxBytes: LiveActivityToken.maxNameBytes) else {
                throw .schema("\(path).activityId", activityIDRule)
            }
            activityID = string
        }
        var priority = 5
        if let value = object["priority"], !value.isNull {
            guard case .int(let int) = value, int == 5 || int == 10 else {
                throw .schema("\(path).priority", "\(path).priority must be one of the following: 5, 10")
            }
            priority = int
        }
        guard let apns else {
            throw .schema("apns", "A Live Activity publish needs apns.aps with the activity's payload")
        }
        if let pushType = apns.pushType, pushType != Self.pushType {
            throw .schema("apns.push_type", "A Live Activity push has push type liveactivity")
        }
        if apns.priority != nil {
            throw .schema("apns.priority", "A Live Activity push takes its priority from \(path).priority (5 or 10)")
        }
        let event = try validateAPS(apns.aps, attributesType: attributesType, events: Set(Event.allCases))
        if event == .start, activityID != nil {
            throw .schema("\(path).activityId", "A start creates a new activity; activityId applies to update and end")
        }
        var extra = apns.custom
        if !apns.data.isEmpty { extra["data"] = .object(apns.data) }
        let result = LiveActivityPayload(
            event: event, attributesType: attributesType, activityID: activityID,
            priority: priority, aps: stamped(apns.aps, timestamp: timestamp), extra: extra)
        let size = result.payload().count
        guard size <= maxPayloadBytes else {
            throw .schema("apns", "The Live Activity payload is \(size) bytes; APNs accepts at most \(maxPayloadBytes)")
        }
        return result
    }

    /// Checks an `aps` object against ActivityKit's rules and returns its event. Shared by publishes to tokens and
    /// to broadcast channels (which pass `events: [.update, .end]` and `attributesType: nil`).
    /// - Parameters:
    ///   - attributesType: the type `attributes-type` must equal in a start payload; nil to skip that comparison.
    ///   - events: the events this kind of publish may carry.
    ///   - path: the JSON path of `aps` in the request, for error messages.
    package static func validateAPS(
        _ aps: [String: JSONValue], attributesType: String?, events: Set<Event>,
        path: String = "apns.aps"
    ) throws(BeamsError) -> Event {
        for key in aps.keys.sorted() where !apsKeys.contains(key) {
            throw .schema(
                "\(path).\(key.prefix(64))",
                "Not a Live Activity key; allowed: \(apsKeys.sorted().joined(separator: ", "))")
        }
        if aps["timestamp"] != nil {
            throw .schema("\(path).timestamp", "The server sets timestamp when it accepts the publish; leave it out")
        }
        guard let eventValue = aps["event"], !eventValue.isNull else {
            throw .schema("\(path).event", "event is required")
        }
        let allowed = Event.allCases.filter { events.contains($0) }.map(\.rawValue).joined(separator: ", ")
        guard let name = eventValue.stringValue, let event = Event(rawValue: name), events.contains(event) else {
            throw .schema("\(path).event", "event must be one of the following: \(allowed)")
        }
        if let state = aps["content-state"] {
            guard state.objectValue != nil else {
                throw .schema("\(path).content-state", PublishRequest.typeMessage("object", state))
            }
        } else if event != .end {
            throw .schema("\(path).content-state", "content-state is required for event \(event.rawValue)")
        }
        if let alert = aps["alert"], alert.objectValue == nil, alert.stringValue == nil {
            throw .schema("\(path).alert", PublishRequest.typeMessage("object", alert))
        }
        for key in ["stale-date", "dismissal-date"] {
            if let value = aps[key], !(value.intValue.map { $0 >= 0 } ?? false) {
                throw .schema("\(path).\(key)", "Must be an integer number of seconds since the epoch (0 or more)")
            }
        }
        if aps["dismissal-date"] != nil, event != .end {
            throw .schema("\(path).dismissal-date", "dismissal-date applies only to event end")
        }
        if let score = aps["relevance-score"], score.doubleValue == nil {
            throw .schema("\(path).relevance-score", PublishRequest.typeMessage("number", score))
        }
        if event == .start {
            try validateStart(aps, attributesType: attributesType, path: path)
        } else {
            for key in ["attributes-type", "attributes", "input-push-token", "input-push-channel"] where aps[key] != nil
            {
                throw .schema("\(path).\(key)", "\(key) applies only to event start")
            }
        }
        return event
    }

    /// `aps` with the server's `timestamp` (epoch seconds) added.
    package static func stamped(_ aps: [String: JSONValue], timestamp: Int) -> [String: JSONValue] {
        var aps = aps
        aps["timestamp"] = .int(timestamp)
        return aps
    }

    package static let attributesTypeRule =
        "Must be 1-\(LiveActivityToken.maxNameBytes) ASCII letters, digits, '_' or '.', not starting with a digit or '.'"
    package static let activityIDRule = "Must be 1-\(LiveActivityToken.maxNameBytes) printable ASCII characters"

    private static func validateStart(_ aps: [String: JSONValue], attributesType: String?, path: String)
        throws(BeamsError)
    {
        guard let typeValue = aps["attributes-type"] else {
            throw .schema("\(path).attributes-type", "attributes-type is required for event start")
        }
        guard let type = typeValue.stringValue else {
            throw .schema("\(path).attributes-type", PublishRequest.typeMessage("string", typeValue))
        }
        if let attributesType, type != attributesType {
            throw .schema("\(path).attributes-type", "Must equal \(member).attributesType (\(attributesType))")
        }
        guard let attributes = aps["attributes"] else {
            throw .schema("\(path).attributes", "attributes is required for event start")
        }
        guard attributes.objectValue != nil else {
            throw .schema("\(path).attributes", PublishRequest.typeMessage("object", attributes))
        }
        guard aps["alert"] != nil else {
            throw .schema("\(path).alert", "alert is required for event start")
        }
        if let value = aps["input-push-token"], value != .int(1) {
            throw .schema("\(path).input-push-token", "input-push-token must be 1")
        }
        if let value = aps["input-push-channel"] {
            guard let channel = value.stringValue,
                LiveActivityToken.isValidPrintable(channel, maxBytes: maxChannelIDBytes)
            else {
                throw .schema(
                    "\(path).input-push-channel",
                    "Must be a channel id of 1-\(maxChannelIDBytes) printable ASCII characters")
            }
        }
    }
}
