import APNsClient
import JSON

/// A publish to broadcast channels (docs/API.md "Broadcast channels"):
/// `{"channels": ["<id>", …], "apns": {"aps": {…}}, "x_live_activity": {"priority": 5|10, "expiration": s}}`.
///
/// `aps` follows the Live Activity rules (`LiveActivityPayload.validateAPS`) restricted to `update` and `end`: APNs
/// cannot start an activity by broadcast. The server stamps `aps.timestamp` at intake. Pure: the caller passes the
/// intake time and the instance's channel bound.
public struct BroadcastPublishRequest: Sendable, Equatable {
    /// Channels to send to, deduplicated, in the order given.
    package var channels: [APNsChannelID]
    /// The JSON body sent to every channel, `timestamp` included.
    package var payload: [UInt8]
    /// `apns-priority`: 5 unless 10 was asked for.
    package var priority: Int
    /// `apns-expiration`, epoch seconds (0: deliver once, do not store).
    package var expiration: Int
    package var event: LiveActivityPayload.Event

    /// Members the body may carry.
    static let members: Set<String> = ["channels", "apns", "x_live_activity"]
    /// Latest `expiration` accepted: 30 days ahead (APNs stores a notification at most that long).
    static let maxExpirationAhead = 30 * 86_400

    /// - Throws: `BeamsError` 400 for a body that is not a JSON object, 422 naming the offending member.
    public static func parse(_ body: [UInt8], timestamp: Int, maxChannels: Int) throws(BeamsError)
        -> BroadcastPublishRequest
    {
        guard let root = JSONValue.parse(body)?.objectValue else { throw .invalidJSON }
        for key in root.keys.sorted() where !members.contains(key) {
            throw .schema(
                String(key.prefix(64)), "Unknown member; allowed: \(members.sorted().joined(separator: ", "))")
        }
        let channels = try parseChannels(root["channels"], maxChannels: maxChannels)
        guard let apnsValue = root["apns"], !apnsValue.isNull else { throw .schema("apns", "apns is required") }
        guard let apns = apnsValue.objectValue else {
            throw .schema("apns", PublishRequest.typeMessage("object", apnsValue))
        }
        for key in apns.keys.sorted() where key != "aps" {
            throw .schema("apns.\(key.prefix(64))", "Unknown member; a broadcast carries apns.aps only")
        }
        guard let apsValue = apns["aps"], !apsValue.isNull else { throw .schema("apns.aps", "apns.aps is required") }
        guard let aps = apsValue.objectValue else {
            throw .schema("apns.aps", PublishRequest.typeMessage("object", apsValue))
        }
        if aps["event"]?.stringValue == LiveActivityPayload.Event.start.rawValue {
            throw .schema("apns.aps.event", "broadcast cannot start a Live Activity; send update or end")
        }
        let event = try LiveActivityPayload.validateAPS(aps, attributesType: nil, events: [.update, .end])
        var priority = 5
        var expiration = 0
        if let optionsValue = root["x_live_activity"], !optionsValue.isNull {
            guard let options = optionsValue.objectValue else {
                throw .schema("x_live_activity", PublishRequest.typeMessage("object", optionsValue))
            }
            for key in options.keys.sorted() where key != "priority" && key != "expiration" {
                throw .schema("x_live_activity.\(key.prefix(64))", "Unknown member; allowed: expiration, priority")
            }
            if let value = options["priority"], !value.isNull {
                guard case .int(let int) = value, int == 5 || int == 10 else {
                    throw .schema(
                        "x_live_activity.priority", "x_live_activity.priority must be one of the following: 5, 10")
                }
                priority = int
            }
            if let value = options["expiration"], !value.isNull {
                guard case .int(let int) = value, int >= 0, int == 0 || int <= timestamp + maxExpirationAhead else {
                    throw .schema(
                        "x_live_activity.expiration",
                        "Must be 0 or epoch seconds at most 30 days ahead (0: deliver once, do not store)")
                }
                expiration = int
            }
        }
        let payload = JSONValue.object(["aps": .object(LiveActivityPayload.stamped(aps, timestamp: timestamp))])
            .serialized()
        guard payload.count <= APNsBroadcastRequest.maxPayloadBytes else {
            throw .schema(
                "apns",
                "The broadcast payload is \(payload.count) bytes; APNs accepts at most \(APNsBroadcastRequest.maxPayloadBytes)"
            )
        }
        return BroadcastPublishRequest(
            channels: channels, payload: payload, priority: priority, expiration: expiration,
            event: event)
    }

    private static func parseChannels(_ value: JSONValue?, maxChannels: Int) throws(BeamsError) -> [APNsChannelID] {
        guard let value, !value.isNull else { throw .schema("channels", "channels is required") }
        guard let array = value.arrayValue else {
            throw .schema("channels", PublishRequest.typeMessage("array", value))
        }
        if array.isEmpty { throw .schema("channels", "Array must have at least 1 items") }
        if array.count > maxChannels { throw .schema("channels", "Array must have at most \(maxChannels) items") }
        var seen: Set<APNsChannelID> = []
        var out: [APNsChannelID] = []
        for (index, element) in array.enumerated() {
            guard let text = element.stringValue else {
                throw .schema("channels.\(index)", PublishRequest.typeMessage("string", element))
            }
            guard let id = APNsChannelID(text) else {
                throw .schema("channels.\(index)", BroadcastChannelID.rule)
            }
            if seen.insert(id).inserted { out.append(id) }
        }
        return out
    }
}

/// Wording shared by the channel routes and the broadcast publish.
package enum BroadcastChannelID {
    package static let rule =
        "Must be a channel id as APNs issued it: base64 (or base64url), at most \(APNsChannelID.maxLength) characters"
}
