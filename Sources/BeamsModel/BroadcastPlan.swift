import APNsClient
import Foundation
import JSON
import PushStore

/// The broadcast part of a stored publish plan (`PublishPlan.Mode.broadcast`): the channels and the one request every
/// channel gets. Channel `index + 1` is its target ref for checkpoints, so a resumed run skips answered channels.
public struct BroadcastPlan: Sendable, Equatable {
    package var channels: [APNsChannelID]
    var payload: [UInt8]
    var priority: Int
    var expiration: Int

    package init(channels: [APNsChannelID], payload: [UInt8], priority: Int, expiration: Int) {
        self.channels = channels
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
    }

    public init(_ request: BroadcastPublishRequest) {
        self.init(
            channels: request.channels, payload: request.payload, priority: request.priority,
            expiration: request.expiration)
    }

    /// The request for the channel at `index`.
    package func request(at index: Int) -> APNsBroadcastRequest {
        APNsBroadcastRequest(
            channelID: channels[index], payload: payload,
            priority: APNsPriority(rawValue: priority) ?? .powerConsidered, expiration: expiration)
    }

    func encoded() -> JSONValue {
        .object([
            "channels": .array(channels.map { .string($0.rawValue) }),
            "payload": .string(String(decoding: payload, as: UTF8.self)),
            "priority": .int(priority),
            "expiration": .int(expiration),
        ])
    }

    /// nil when a member is missing or a channel id is not valid.
    init?(decoding object: [String: JSONValue]) {
        guard let list = object["channels"]?.arrayValue, let payload = object["payload"]?.stringValue,
            let priority = object["priority"]?.intValue, let expiration = object["expiration"]?.intValue
        else { return nil }
        var channels: [APNsChannelID] = []
        for element in list {
            guard let id = element.stringValue.flatMap(APNsChannelID.init) else { return nil }
            channels.append(id)
        }
        self.init(channels: channels, payload: Array(payload.utf8), priority: priority, expiration: expiration)
    }
}

extension PublishPlan {
    /// The plan of a publish to broadcast channels: no device part, only `broadcast`.
    public init(broadcast: BroadcastPlan, body: [UInt8]) {
        platforms = [Platform.apns.rawValue]
        requestBody = JSONValue.parse(body) ?? .null
        mode = .broadcast(broadcast)
    }
}
