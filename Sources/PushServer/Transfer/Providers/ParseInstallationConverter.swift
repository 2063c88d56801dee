import BeamsModel
import Foundation
import JSON

/// Parse Server `_Installation` rows (the REST form and mongoexport's storage form) as device lines. Pure.
/// The mapping and what is dropped: docs/OPERATIONS.md, "Importing from other providers".
package enum ParseInstallationConverter {
    /// `pushType` first, then `deviceType`, as Parse's push adapter chooses (`expo` and unknown types refused).
    package static let platforms: [String: String] = [
        "ios": "apns", "osx": "apns", "tvos": "apns", "watchos": "apns", "android": "fcm", "fcm": "fcm", "web": "web",
    ]

    package static func convert(_ row: [String: JSONValue]) -> (
        device: Result<JSONValue, DeviceLineParser.Refusal>, notes: [String]
    ) {
        let rawToken = row["deviceToken"]?.stringValue
        func refuse(_ reason: String) -> (Result<JSONValue, DeviceLineParser.Refusal>, [String]) {
            (.failure(.row(reason, token: rawToken)), [])
        }
        let pushType = row["pushType"]?.stringValue
        let deviceType = row["deviceType"]?.stringValue
        if pushType == "expo" || deviceType == "expo" {
            return refuse("an Expo token works only through Expo's service (the app must register its native token)")
        }
        // A pushType Parse's adapter does not know (`gcm`, `ppns`) leaves the choice to deviceType.
        guard let type = [pushType, deviceType].compactMap({ $0 }).first(where: { platforms[$0] != nil }),
            let platform = platforms[type]
        else {
            let named = deviceType ?? pushType
            return refuse(
                named.map { "deviceType \($0.prefix(32)) is not one push-server sends to" } ?? "no deviceType")
        }
        guard let rawToken, !rawToken.isEmpty else {
            return refuse("no deviceToken (the installation never registered for push)")
        }
        var line: [String: JSONValue] = ["platform": .string(platform)]
        var notes: [String] = []
        if platform == "web" {
            // Parse keeps a browser's PushSubscription as a JSON string.
            guard let subscription = JSONValue.parse(Array(rawToken.utf8))?.objectValue,
                let endpoint = subscription["endpoint"], let keys = subscription["keys"]
            else { return refuse("a web deviceToken must be a PushSubscription JSON string") }
            line["subscription"] = .object(["endpoint": endpoint, "keys": keys])
        } else if platform == "apns" {
            // Old iOS SDKs sent `<abcd ef01 …>`; Parse lower-cases 64-digit tokens only, this does it for every length.
            line["token"] = .string(String(rawToken.filter { $0 != "<" && $0 != ">" && $0 != " " }).lowercased())
        } else {
            line["token"] = .string(rawToken)
        }
        if let channels = row["channels"]?.arrayValue {
            var interests: [JSONValue] = []
            for channel in channels {
                // "" is Parse's broadcast channel: every installation is in it, and Beams has no such interest.
                guard let name = channel.stringValue, !name.isEmpty else { continue }
                if InterestName.isValid(name) {
                    interests.append(.string(name))
                } else {
                    notes.append("channel names that are not interest names dropped")
                }
            }
            line["interests"] = .array(interests)
        }
        if let user = userID(row) { line["userId"] = .string(user) }
        if let zone = row["timeZone"]?.stringValue {
            if TimeZoneName.problem(zone) == nil {
                line["timeZone"] = .string(zone)
            } else {
                notes.append("time zones that are not IANA names dropped")
            }
        }
        if let app = row["appIdentifier"]?.stringValue, !app.isEmpty, app.utf8.count <= 255, platform == "apns" {
            // Parse sends an installation's pushes with its appIdentifier as the APNs topic.
            line["bundleId"] = .string(app)
        }
        var metadata: [String: JSONValue] = [:]
        if let id = (row["objectId"] ?? row["_id"])?.stringValue { metadata["parseObjectId"] = .string(id) }
        if let id = row["installationId"]?.stringValue { metadata["parseInstallationId"] = .string(id.lowercased()) }
        if !metadata.isEmpty { line["metadata"] = .object(metadata) }
        if let created = date(row["createdAt"] ?? row["_created_at"]) { line["createdAt"] = .string(created) }
        if let updated = date(row["updatedAt"] ?? row["_updated_at"]) { line["lastRegisteredAt"] = .string(updated) }
        return (.success(.object(line)), notes)
    }

    /// The `user` pointer (`{"__type":"Pointer","className":"_User","objectId":…}`) or mongoexport's `_p_user`
    /// (`"_User$<objectId>"`).
    package static func userID(_ row: [String: JSONValue]) -> String? {
        if let pointer = row["user"]?.objectValue, pointer["className"]?.stringValue == "_User",
            let id = pointer["objectId"]?.stringValue, !id.isEmpty
        {
            return id
        }
        if let stored = row["_p_user"]?.stringValue, stored.hasPrefix("_User$"), stored.count > 6 {
            return String(stored.dropFirst(6))
        }
        return nil
    }

    /// An ISO date as the REST API (`"…Z"` or `{"__type":"Date","iso":…}`) or mongoexport (`{"$date":…}`) writes it.
    package static func date(_ value: JSONValue?) -> String? {
        guard let value else { return nil }
        let text = value.stringValue ?? value.objectValue.flatMap { ($0["iso"] ?? $0["$date"])?.stringValue }
        guard let text, RFC3339.parse(text) != nil else { return nil }
        return text
    }
}
