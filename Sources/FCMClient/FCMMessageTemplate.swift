import JSON

/// The device-independent part of an FCM HTTP v1 `messages:send` body, built once per publish from the Beams
/// `fcm` section; `body(token:)` adds one device's registration token.
///
/// Beams' `fcm` section uses the legacy FCM HTTP names; they map to v1 like this:
/// - `notification.title`, `.body`, `.image` → `message.notification`; the Android-only members (`icon`, `sound`,
///   `tag`, `color`, `click_action`, `body_loc_key`, `body_loc_args`, `title_loc_key`, `title_loc_args`, and
///   `android_channel_id` renamed `channel_id`) → `message.android.notification`, since v1 answers
///   `400 Unknown name` to them in the top-level notification;
/// - `data` (any JSON) → `message.data`, whose values v1 requires to be strings: strings pass as they are, every
///   other value is written as its JSON text (`3` → `"3"`, `{"a":1}` → `"{\"a\":1}"`), which the app parses back;
///   plus `pusher`, the JSON text of `{"instanceId","publishId","hasDisplayableContent","hasData"}` that the Beams
///   Android SDK's delivery and open receivers read;
/// - `time_to_live` (seconds, 0…2419200) → `android.ttl` `"<n>s"`; `priority` `normal`/`high` →
///   `android.priority` `NORMAL`/`HIGH`; `collapse_key`, `restricted_package_name` → `android.*`;
/// - `dry_run` → the body's `validate_only`; the iOS-only `content_available` and `mutable_content` are dropped.
///
/// Everything else is refused with `FCMPayloadError`, at publish time, rather than becoming one FCM `400` per
/// device: targets (`to`, `registration_ids`, `condition`, `topic`, `token`) because the server chooses them,
/// unknown members because FCM rejects them.
package struct FCMMessageTemplate: Sendable, Equatable {
    /// FCM's size limit on a message, checked on the message without the token.
    package static let maxMessageBytes = 4096
    /// FCM's longest `ttl`: 28 days.
    package static let maxTimeToLive = 2_419_200

    /// The `message` object without `token`.
    package let message: [String: JSONValue]
    /// `dry_run`: FCM validates but delivers nothing.
    package let validateOnly: Bool
    /// The serialized `message` without `token`: what the size limit applies to.
    package let messageBytes: [UInt8]
    /// The body around the token (`body(token:)`), derived from `messageBytes` and `validateOnly`.
    let bodyParts: BodyParts

    /// The bytes before and after the escaped token in every device's body.
    struct BodyParts: Sendable, Equatable {
        var prefix: [UInt8]
        var suffix: [UInt8]
    }

    /// `android.ttl` in seconds (from `time_to_live`), nil when the message has none (FCM's default: 4 weeks).
    package var timeToLive: Int? {
        guard case .string(let text)? = message["android"]?.objectValue?["ttl"], text.hasSuffix("s") else { return nil }
        return Int(text.dropLast())
    }

    private static let titleBodyImage: Set<String> = ["title", "body", "image"]
    private static let androidStrings: Set<String> = [
        "icon", "sound", "tag", "color", "click_action", "body_loc_key",
        "title_loc_key", "android_channel_id",
    ]
    private static let androidStringArrays: Set<String> = ["body_loc_args", "title_loc_args"]
    private static let sectionFields: Set<String> = [
        "notification", "data", "time_to_live", "collapse_key", "priority",
        "restricted_package_name", "dry_run", "content_available",
        "mutable_content",
    ]

    /// Maps a publish's `fcm` section.
    ///
    /// - Parameters:
    ///   - section: the `fcm` member of the publish body.
    ///   - instanceID, publishID: written into `data.pusher` for the Android SDK's reports.
    package init(section: JSONValue, instanceID: String, publishID: String) throws(FCMPayloadError) {
        guard let fcm = section.objectValue else { throw .notAnObject(path: "fcm") }
        for key in fcm.keys.sorted() where !Self.sectionFields.contains(key) {
            throw .unknownField(path: "fcm.\(key)")
        }
        var message: [String: JSONValue] = [:]
        var android: [String: JSONValue] = [:]

        var hasNotification = false
        if let value = fcm["notification"] {
            guard let notification = value.objectValue else { throw .notAnObject(path: "fcm.notification") }
            hasNotification = true
            var top: [String: JSONValue] = [:]
            var androidNotification: [String: JSONValue] = [:]
            for (key, member) in notification.sorted(by: { $0.key < $1.key }) {
                let path = "fcm.notification.\(key)"
                if Self.titleBodyImage.contains(key) {
                    top[key] = .string(try Self.string(member, path))
                } else if Self.androidStrings.contains(key) {
                    let text = try Self.string(member, path)
                    if key == "color" { try Self.checkColor(text, path) }
                    androidNotification[key == "android_channel_id" ? "channel_id" : key] = .string(text)
                } else if Self.androidStringArrays.contains(key) {
                    guard let elements = member.arrayValue, elements.allSatisfy({ $0.stringValue != nil }) else {
                        throw .wrongType(path: path, expected: "an array of strings")
                    }
                    androidNotification[key] = .array(elements)
                } else {
                    throw .unknownField(path: path)
                }
            }
            if !top.isEmpty { message["notification"] = .object(top) }
            if !androidNotification.isEmpty { android["notification"] = .object(androidNotification) }
        }

        var data: [String: JSONValue] = [:]
        var hasData = false
        if let value = fcm["data"] {
            guard let customer = value.objectValue else { throw .notAnObject(path: "fcm.data") }
            hasData = true
            for (key, member) in customer.sorted(by: { $0.key < $1.key }) {
                try Self.checkDataKey(key)
                data[key] = .string(member.stringValue ?? member.jsonText)
            }
        }
        let pusher = JSONWriter.object([
            ("instanceId", .string(instanceID)), ("publishId", .string(publishID)),
            ("hasDisplayableContent", .bool(hasNotification)), ("hasData", .bool(hasData)),
        ])
        data["pusher"] = .string(String(decoding: pusher, as: UTF8.self))
        message["data"] = .object(data)

        if let value = fcm["time_to_live"] {
            guard let seconds = value.intValue else {
                throw .wrongType(path: "fcm.time_to_live", expected: "a whole number of seconds")
            }
            guard (0...Self.maxTimeToLive).contains(seconds) else {
                throw .invalidValue(path: "fcm.time_to_live", reason: "must be between 0 and \(Self.maxTimeToLive)")
            }
            android["ttl"] = .string("\(seconds)s")
        }
        if let value = fcm["priority"] {
            switch value.stringValue {
            case "normal": android["priority"] = "NORMAL"
            case "high": android["priority"] = "HIGH"
            case .some: throw .invalidValue(path: "fcm.priority", reason: "must be \"normal\" or \"high\"")
            case .none: throw .wrongType(path: "fcm.priority", expected: "a string")
            }
        }
        for key in ["collapse_key", "restricted_package_name"] {
            if let value = fcm[key] { android[key] = .string(try Self.string(value, "fcm.\(key)")) }
        }
        for key in ["content_available", "mutable_content"] where fcm[key].map({ $0.boolValue == nil }) ?? false {
            throw .wrongType(path: "fcm.\(key)", expected: "true or false")
        }
        var validateOnly = false
        if let value = fcm["dry_run"] {
            guard let flag = value.boolValue else { throw .wrongType(path: "fcm.dry_run", expected: "true or false") }
            validateOnly = flag
        }
        if !android.isEmpty { message["android"] = .object(android) }

        let bytes = JSONValue.object(message).serialized()
        guard bytes.count <= Self.maxMessageBytes else {
            throw .tooLarge(bytes: bytes.count, limit: Self.maxMessageBytes)
        }
        self.message = message
        self.validateOnly = validateOnly
        self.messageBytes = bytes
        bodyParts = Self.bodyParts(messageBytes: bytes, validateOnly: validateOnly)
    }

    /// The `messages:send` body for one device: `{"message":{…,"token":…}}` plus `"validate_only":true` for a
    /// dry run. The token is JSON-escaped, so whatever a device registered cannot change the message's shape. Built
    /// as the publish's `bodyParts` (made once per template) around the escaped token, in one allocation.
    package func body(token: String) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bodyParts.prefix.count + token.utf8.count + 8 + bodyParts.suffix.count)
        output += bodyParts.prefix
        JSONWriter.writeString(token, to: &output)
        output += bodyParts.suffix
        return output
    }

    /// What surrounds the token in every device's body: `{"message":` + the message without its closing brace +
    /// `,"token":`, then `}` (+ `,"validate_only":true`) + `}`. Member order does not matter to FCM, and this
    /// avoids re-serializing (or re-copying in pieces) the whole message per device.
    static func bodyParts(messageBytes: [UInt8], validateOnly: Bool) -> BodyParts {
        // `messageBytes` is a non-empty object; the token goes in before its closing brace.
        var prefix = Array(#"{"message":"#.utf8)
        prefix += messageBytes.dropLast()
        if messageBytes.count > 2 { prefix.append(UInt8(ascii: ",")) }
        JSONWriter.writeString("token", to: &prefix)
        prefix.append(UInt8(ascii: ":"))
        var suffix: [UInt8] = [UInt8(ascii: "}")]
        if validateOnly { suffix += Array(#","validate_only":true"#.utf8) }
        suffix.append(UInt8(ascii: "}"))
        return BodyParts(prefix: prefix, suffix: suffix)
    }

    private static func string(_ value: JSONValue, _ path: String) throws(FCMPayloadError) -> String {
        guard let text = value.stringValue else { throw .wrongType(path: path, expected: "a string") }
        return text
    }

    /// FCM v1 wants `#rrggbb`.
    private static func checkColor(_ text: String, _ path: String) throws(FCMPayloadError) {
        let bytes = Array(text.utf8)
        let isHex: (UInt8) -> Bool = {
            (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0)
        }
        guard bytes.count == 7, bytes[0] == UInt8(ascii: "#"), bytes.dropFirst().allSatisfy(isHex) else {
            throw .invalidValue(path: path, reason: "must be #rrggbb")
        }
    }

    /// FCM reserves `from`, `message_type` and keys starting with `google` or `gcm`; `pusher` is the server's, and
    /// an empty key is no key.
    private static func checkDataKey(_ key: String) throws(FCMPayloadError) {
        let lower = key.lowercased()
        if key.isEmpty || key == "from" || key == "message_type" || key == "pusher" || lower.hasPrefix("google")
            || lower.hasPrefix("gcm")
        {
            throw .reservedDataKey(key)
        }
    }
}
