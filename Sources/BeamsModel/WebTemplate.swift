import JSON
import WebPush

/// The `web` object of a Beams publish, validated at intake and turned into the push message body the Beams Web
/// SDK's service worker reads:
/// `{"notification":{title, body, icon, deep_link, hide_notification_if_site_has_focus},
///   "data":{…customer data…, "pusher":{"instanceId","publishId","hasDisplayableContent","hasData"}}}`.
/// The worker ignores a message without `data.pusher` and reads `notification.*` unconditionally, so both are
/// always present (`notification` may be `{}`). Beams' `web` has no urgency or topic: none is sent (RFC 8030's
/// default urgency is `normal`).
package struct WebTemplate: Sendable, Equatable {
    /// Beams' maximum and default `web.time_to_live`: four weeks.
    package static let maxTimeToLive = WebPushMessage.maxTTL
    /// The longest body that still fits one encrypted push message (RFC 8291 §4).
    package static let maxPayloadBytes = WebPushMessage.maxPayloadSize

    package var notification: [String: JSONValue]
    package var data: [String: JSONValue]?
    /// Seconds the push service keeps the message for an offline browser (the `TTL` header).
    package var timeToLive: Int

    static let notificationStrings: Set<String> = ["title", "body", "icon", "deep_link"]
    static let sectionFields: Set<String> = ["notification", "data", "time_to_live"]

    /// - Parameters:
    ///   - section: the member's name in error paths (`unifiedpush` reads the same fields, `UnifiedPushTemplate`).
    ///   - extraFields: members the caller reads itself.
    package static func parse(_ web: [String: JSONValue], section: String = "web", extraFields: Set<String> = [])
        throws(BeamsError) -> WebTemplate
    {
        for key in web.keys.sorted() where !sectionFields.contains(key) && !extraFields.contains(key) {
            throw .schema("\(section).\(key)", "Additional property \(key) is not allowed")
        }
        var notification: [String: JSONValue] = [:]
        if let value = web["notification"], !value.isNull {
            guard let object = value.objectValue else {
                throw .schema("\(section).notification", PublishRequest.typeMessage("object", value))
            }
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                let path = "\(section).notification.\(key)"
                if notificationStrings.contains(key) {
                    guard member.stringValue != nil else {
                        throw .schema(path, PublishRequest.typeMessage("string", member))
                    }
                } else if key == "hide_notification_if_site_has_focus" {
                    guard member.boolValue != nil else {
                        throw .schema(path, PublishRequest.typeMessage("boolean", member))
                    }
                } else {
                    throw .schema(path, "Additional property \(key) is not allowed")
                }
                notification[key] = member
            }
        }
        var data: [String: JSONValue]?
        if let value = web["data"], !value.isNull {
            guard let object = value.objectValue else {
                throw .schema("\(section).data", PublishRequest.typeMessage("object", value))
            }
            if object["pusher"] != nil { throw .schema("\(section).data", "Cannot contain the key pusher") }
            data = object
        }
        var ttl = maxTimeToLive
        if let value = web["time_to_live"], !value.isNull {
            guard let seconds = value.intValue else {
                throw .schema("\(section).time_to_live", PublishRequest.typeMessage("integer", value))
            }
            guard (0...maxTimeToLive).contains(seconds) else {
                throw .schema("\(section).time_to_live", "Must be between 0 and \(maxTimeToLive)")
            }
            ttl = seconds
        }
        return WebTemplate(notification: notification, data: data, timeToLive: ttl)
    }

    /// The message body for one publish. - Throws: 422 when it does not fit one push message.
    package func payload(instanceID: String, publishID: String, section: String = "web") throws(BeamsError) -> [UInt8] {
        var dataMembers = data ?? [:]
        dataMembers["pusher"] = .object([
            "instanceId": .string(instanceID), "publishId": .string(publishID),
            "hasDisplayableContent": .bool(!notification.isEmpty), "hasData": .bool(data != nil),
        ])
        let bytes = JSONValue.object(["notification": .object(notification), "data": .object(dataMembers)]).serialized()
        guard bytes.count <= Self.maxPayloadBytes else {
            throw .schema(
                section,
                "The \(section) notification is \(bytes.count) bytes; at most \(Self.maxPayloadBytes) fit one push message"
            )
        }
        return bytes
    }
}
