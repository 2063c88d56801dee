import JSON

/// The `apns` object of a Beams publish, turned into what every device's APNs request shares: the payload
/// (minus the per-publish `data.pusher` ids, added by `payload(instanceID:publishID:)`) and the header fields.
package struct APNsTemplate: Sendable, Equatable {
    /// `apns.aps`, forwarded as the payload's `aps`.
    package var aps: [String: JSONValue]
    /// `apns.data`, merged next to `pusher` under the payload's `data`.
    package var data: [String: JSONValue]
    /// Other top-level keys of `apns` (custom payload keys), forwarded unchanged.
    package var custom: [String: JSONValue]
    package var priority: Int?
    package var expiration: Int?
    package var collapseID: String?
    /// Beyond Beams: an explicit `apns-push-type`; otherwise the APNs client infers it from the payload.
    package var pushType: String?
    /// `apns.pusher.disable_delivery_tracking`: when true, no `content-available: 1` is injected.
    package var disableDeliveryTracking: Bool

    /// Keys of `apns` with a meaning of their own (not forwarded as custom payload keys).
    static let reservedKeys: Set<String> = [
        "aps", "data", "priority", "expiration", "collapse_id", "push_type", "pusher",
    ]
    static let pushTypes: Set<String> = [
        "alert", "background", "voip", "complication", "fileprovider", "mdm",
        "liveactivity", "location", "pushtotalk", "widgets", "controls",
    ]

    static func parse(_ apns: [String: JSONValue]) throws(BeamsError) -> APNsTemplate {
        var aps: [String: JSONValue] = [:]
        if let value = apns["aps"], !value.isNull {
            guard let object = value.objectValue else {
                throw .schema("apns.aps", PublishRequest.typeMessage("object", value))
            }
            aps = object
        }
        var data: [String: JSONValue] = [:]
        if let value = apns["data"], !value.isNull {
            guard let object = value.objectValue else {
                throw .schema("apns.data", PublishRequest.typeMessage("object", value))
            }
            data = object
        }
        var priority: Int?
        if let value = apns["priority"], !value.isNull {
            guard let int = value.intValue, [1, 5, 10].contains(int) else {
                throw .schema("apns.priority", "apns.priority must be one of the following: 1, 5, 10")
            }
            priority = int
        }
        var expiration: Int?
        if let value = apns["expiration"], !value.isNull {
            guard let int = value.intValue, int >= 0 else {
                throw .schema("apns.expiration", "Must be an integer number of seconds since the epoch (0 or more)")
            }
            expiration = int
        }
        var collapseID: String?
        if let value = apns["collapse_id"], !value.isNull {
            guard let string = value.stringValue else {
                throw .schema("apns.collapse_id", PublishRequest.typeMessage("string", value))
            }
            guard string.utf8.count <= 64 else {
                throw .schema("apns.collapse_id", "String length must be less than or equal to 64 bytes")
            }
            collapseID = string
        }
        var pushType: String?
        if let value = apns["push_type"], !value.isNull {
            guard let string = value.stringValue, pushTypes.contains(string) else {
                throw .schema(
                    "apns.push_type", "must be one of the following: \(pushTypes.sorted().joined(separator: ", "))")
            }
            pushType = string
        }
        var disableTracking = false
        if let pusher = apns["pusher"], !pusher.isNull {
            guard let object = pusher.objectValue else {
                throw .schema("apns.pusher", PublishRequest.typeMessage("object", pusher))
            }
            if let flag = object["disable_delivery_tracking"], !flag.isNull {
                guard let bool = flag.boolValue else {
                    throw .schema("apns.pusher.disable_delivery_tracking", PublishRequest.typeMessage("boolean", flag))
                }
                disableTracking = bool
            }
        }
        let custom = apns.filter { !reservedKeys.contains($0.key) }
        return APNsTemplate(
            aps: aps, data: data, custom: custom, priority: priority, expiration: expiration,
            collapseID: collapseID, pushType: pushType, disableDeliveryTracking: disableTracking)
    }

    /// The APNs JSON payload for one publish: `aps` (+ `content-available: 1` for delivery tracking), custom keys,
    /// and `data` with `pusher.{instanceId, publishId}` — what the Beams iOS SDK reads to report deliveries/opens.
    package func payload(instanceID: String, publishID: String) -> [UInt8] {
        var root = custom
        var aps = self.aps
        if !disableDeliveryTracking { aps["content-available"] = .int(1) }
        root["aps"] = .object(aps)
        var data = self.data
        data["pusher"] = .object(["instanceId": .string(instanceID), "publishId": .string(publishID)])
        root["data"] = .object(data)
        return JSONValue.object(root).serialized()
    }
}
