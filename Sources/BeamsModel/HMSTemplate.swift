import JSON

/// The `hms` object of a publish (beyond Beams; docs/API.md "Huawei Push Kit"): Huawei's v1 `message` without
/// its target. Mapping:
/// - `notification` (`title`, `body`, `image`) → `message.notification`;
/// - `data` (an object, or a string the app parses) → `message.data`, always a string (Huawei's type); an object
///   gains `pusher: {instanceId, publishId}` as the `web` data does;
/// - `android` (`collapse_key`, `urgency`, `category`, `ttl`, `bi_tag`, `notification` with `click_action`, …) →
///   `message.android`, passed as given after the checks below.
///
/// Huawei refuses a notification without `android.notification.click_action`; when the publish shows a notification
/// and gives none, `{"type": 3}` (open the app) is added. Limit: the message without its tokens must fit 4,096
/// bytes (Huawei's limit), checked at intake (422), never per device.
package struct HMSTemplate: Sendable, Equatable {
    static let section = "hms"
    static let maxMessageBytes = 4096
    /// The `message` object sent, without `token`.
    package var message: [String: JSONValue]

    package static func parse(_ object: [String: JSONValue], instanceID: String, publishID: String) throws(BeamsError)
        -> HMSTemplate
    {
        let known: Set<String> = ["notification", "data", "android"]
        for key in object.keys where !known.contains(key) {
            throw .schema("\(section).\(key)", "Unknown field: the hms section takes notification, data and android")
        }
        guard object.values.contains(where: { !$0.isNull }) else {
            throw .schema(section, "At least one of notification, data or android is required")
        }
        var message: [String: JSONValue] = [:]
        if let value = object["notification"], !value.isNull {
            guard let notification = value.objectValue else {
                throw .schema("\(section).notification", PublishRequest.typeMessage("object", value))
            }
            for key in notification.keys where !["title", "body", "image"].contains(key) {
                throw .schema(
                    "\(section).notification.\(key)", "Unknown field: notification takes title, body and image")
            }
            for (key, member) in notification where member.stringValue == nil {
                throw .schema("\(section).notification.\(key)", PublishRequest.typeMessage("string", member))
            }
            message["notification"] = value
        }
        if let value = object["data"], !value.isNull {
            switch value {
            case .string:
                message["data"] = value
            case .object(var members):
                members["pusher"] = .object(["instanceId": .string(instanceID), "publishId": .string(publishID)])
                message["data"] = .string(JSONValue.object(members).jsonText)
            default:
                throw .schema("\(section).data", PublishRequest.typeMessage("object or string", value))
            }
        }
        var android: [String: JSONValue] = [:]
        if let value = object["android"], !value.isNull {
            guard let members = value.objectValue else {
                throw .schema("\(section).android", PublishRequest.typeMessage("object", value))
            }
            android = members
            if let urgency = members["urgency"], !urgency.isNull,
                !["HIGH", "NORMAL"].contains(urgency.stringValue ?? "")
            {
                throw .schema("\(section).android.urgency", "Must be HIGH or NORMAL")
            }
            if let key = members["collapse_key"], !key.isNull, !(-1...100).contains(key.intValue ?? -2) {
                throw .schema("\(section).android.collapse_key", "Must be an integer from -1 to 100")
            }
            if let value = members["notification"], !value.isNull, value.objectValue == nil {
                throw .schema("\(section).android.notification", PublishRequest.typeMessage("object", value))
            }
        }
        var androidNotification = android["notification"]?.objectValue
        if message["notification"] != nil && androidNotification == nil { androidNotification = [:] }
        if var notification = androidNotification {
            if let action = notification["click_action"], !action.isNull {
                guard let members = action.objectValue, let type = members["type"]?.intValue, (1...4).contains(type)
                else {
                    throw .schema("\(section).android.notification.click_action", "Must be an object with type 1 to 4")
                }
                if type == 1 && members["intent"] == nil && members["action"] == nil {
                    throw .schema("\(section).android.notification.click_action", "Type 1 needs intent or action")
                }
                if type == 2 && members["url"]?.stringValue == nil {
                    throw .schema("\(section).android.notification.click_action", "Type 2 needs url")
                }
            } else {
                notification["click_action"] = .object(["type": .int(3)])
            }
            android["notification"] = .object(notification)
        }
        if !android.isEmpty { message["android"] = .object(android) }
        let size = JSONValue.object(message).serialized().count
        guard size <= maxMessageBytes else {
            throw .schema(section, "The hms message is \(size) bytes; Huawei accepts at most \(maxMessageBytes)")
        }
        return HMSTemplate(message: message)
    }
}
