import JSON
import WebPush

/// The `unifiedpush` object of a publish (beyond Beams; docs/API.md "UnifiedPush"): the `web` section's fields
/// (`notification`, `data`, `time_to_live`) plus RFC 8030's `urgency` and `topic`. A UnifiedPush app decrypts the
/// message itself (the android-connector hands it the clear bytes), so the body is the `web` body, JSON the app
/// parses: `{"notification":{…},"data":{…customer data…,"pusher":{"instanceId","publishId",…}}}`. A section of its
/// own rather than a mapping of `fcm`: FCM's `android` options (channel, priority, collapse key) have no meaning
/// on a push server the user picked, and one publish can address FCM and UnifiedPush phones with different text.
///
/// Limit: the body must fit one RFC 8291 record of 4096 bytes (UnifiedPush's AND_3.0.0 limit), so at most 3993
/// bytes of JSON; checked at intake (422), never per device.
package struct UnifiedPushTemplate: Sendable, Equatable {
    package static let section = "unifiedpush"
    package var web: WebTemplate
    package var urgency: WebPushUrgency?
    package var topic: String?

    package static func parse(_ object: [String: JSONValue]) throws(BeamsError) -> UnifiedPushTemplate {
        let web = try WebTemplate.parse(object, section: section, extraFields: ["urgency", "topic"])
        var urgency: WebPushUrgency?
        if let value = object["urgency"], !value.isNull {
            guard let text = value.stringValue else {
                throw .schema("\(section).urgency", PublishRequest.typeMessage("string", value))
            }
            guard let parsed = WebPushUrgency(rawValue: text) else {
                throw .schema("\(section).urgency", "Must be one of very-low, low, normal, high")
            }
            urgency = parsed
        }
        var topic: String?
        if let value = object["topic"], !value.isNull {
            guard let text = value.stringValue else {
                throw .schema("\(section).topic", PublishRequest.typeMessage("string", value))
            }
            do {
                _ = try WebPushMessage(payload: [], ttl: 0, topic: text)
            } catch {
                throw .schema("\(section).topic", "Must be 1-32 base64url characters (RFC 8030 Topic)")
            }
            topic = text
        }
        return UnifiedPushTemplate(web: web, urgency: urgency, topic: topic)
    }

    /// The clear-text body for one publish. - Throws: 422 when it does not fit one encrypted message.
    package func payload(instanceID: String, publishID: String) throws(BeamsError) -> [UInt8] {
        try web.payload(instanceID: instanceID, publishID: publishID, section: Self.section)
    }
}
