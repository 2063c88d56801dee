import JSON
import Logging
import PushStore

/// A dead or removed device as the invalidation feed lists it (`InvalidationFeedAPI`) and the webhook carries it
/// (`WebhookOutbox`): one wire form for both, so a receiver that takes both can de-duplicate by `event_id`
/// (docs/API.md "Device invalidations").
package enum DeviceInvalidationEvent {
    /// An event as the feed lists it and the `device.invalidated` webhook carries it.
    package static func render(_ event: DeviceInvalidation) -> JSONValue {
        var object: [String: JSONValue] = [
            "event_id": .string(eventID(event)),
            "event_type": .string(eventType(event)),
            "instance_id": .string(event.instanceID),
            "device_id": .string(event.deviceID),
            "platform": .string(event.platform),
            "token_masked": .string(event.maskedToken),
            "user_id": event.userID.map(JSONValue.string) ?? .null,
            "reason": .string(event.reason),
            "provider_status": .int(event.status),
            "provider_timestamp": event.providerTimestamp.map { .string(LogFormat.timestamp($0)) } ?? .null,
            "at": .string(LogFormat.timestamp(event.at)),
        ]
        object["cursor"] = .string(String(event.id))
        return .object(object)
    }

    /// `device.removed` for a device deleted through the API, `device.invalidated` for a provider's verdict.
    package static func eventType(_ event: DeviceInvalidation) -> String {
        event.isRemoval ? "device.removed" : "device.invalidated"
    }

    /// The event's stable id: the same for every retry of its webhook and for its feed entry, so a receiver that
    /// takes both can de-duplicate.
    package static func eventID(_ event: DeviceInvalidation) -> String { "inv_\(event.id)" }
}
