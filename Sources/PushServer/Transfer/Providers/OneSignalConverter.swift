import BeamsModel
import JSON

/// OneSignal's subscriptions (players) CSV export rows as device lines. Pure. The mapping and what is dropped:
/// docs/OPERATIONS.md, "Importing from other providers".
package struct OneSignalConverter {
    /// The columns in the header's order.
    package let columns: [String]
    package let options: ProviderImportOptions

    /// - Throws: when the header lacks `identifier` or `device_type`, or names a column twice.
    package init(header: [String], options: ProviderImportOptions) throws(ProviderFileError) {
        guard Set(header).count == header.count else {
            throw ProviderFileError(description: "the CSV header names a column twice")
        }
        for required in ["identifier", "device_type"] where !header.contains(required) {
            throw ProviderFileError(
                description: "the CSV header has no `\(required)` column (is this OneSignal's players export?)")
        }
        columns = header
        self.options = options
    }

    /// OneSignal's `device_type` codes push-server has no platform for.
    package static let unsupported: [String: String] = [
        "2": "Amazon", "3": "Windows Phone", "4": "Chrome app or extension", "6": "Windows",
        "7": "Safari (legacy web push)",
        "9": "macOS", "10": "Alexa", "11": "email", "12": "unknown", "14": "SMS",
    ]

    package func convert(_ fields: [String]) -> (device: Result<JSONValue, DeviceLineParser.Refusal>, notes: [String]) {
        guard fields.count == columns.count else {
            return (.failure(.row("\(fields.count) fields, the header has \(columns.count)", token: nil)), [])
        }
        var row: [String: String] = [:]
        for (name, value) in zip(columns, fields) { row[name] = value }
        let token = row["identifier"] ?? ""
        func refuse(_ reason: String) -> (Result<JSONValue, DeviceLineParser.Refusal>, [String]) {
            (.failure(.row(reason, token: token.isEmpty ? nil : token)), [])
        }
        if row["invalid_identifier"] == "t" { return refuse("unsubscribed at OneSignal (invalid_identifier = t)") }
        if row["notification_types"] == "-2" { return refuse("unsubscribed at OneSignal (notification_types = -2)") }
        guard !token.isEmpty else { return refuse("no identifier (the subscription has no push token)") }
        let type = row["device_type"] ?? ""
        var line: [String: JSONValue] = [:]
        var notes: [String] = []
        switch type {
        case "0":
            line["platform"] = .string("apns")
            line["token"] = .string(token.lowercased())
        case "1":
            line["platform"] = .string("fcm")
            line["token"] = .string(token)
        case "13":
            line["platform"] = .string("hms")
            line["token"] = .string(token)
        case "5", "8":
            guard let auth = row["web_auth"], !auth.isEmpty, let p256dh = row["web_p256"], !p256dh.isEmpty else {
                return refuse("a web subscription needs the web_auth and web_p256 columns (export with extra_fields)")
            }
            line["platform"] = .string("web")
            line["subscription"] = .object([
                "endpoint": .string(token),
                "keys": .object(["auth": .string(auth), "p256dh": .string(p256dh)]),
            ])
        default:
            return refuse(
                "device_type \(type.prefix(8)) (\(Self.unsupported[type] ?? "unknown")) is not one push-server sends to"
            )
        }
        if let user = row["external_user_id"], !user.isEmpty { line["userId"] = .string(user) }
        if let zone = row["timezone"], !zone.isEmpty {
            // Seconds from UTC name no zone (one offset, many rules): left out rather than guessed.
            notes.append("time zones given only as a UTC offset left out")
        }
        if !options.tagInterests.isEmpty, let text = row["tags"], !text.isEmpty {
            guard let tags = JSONValue.parse(Array(text.utf8))?.objectValue else {
                return refuse("`tags` is not a JSON object")
            }
            var interests: [JSONValue] = []
            for (key, template) in options.tagInterests {
                guard let tag = tags[key] else { continue }
                let value = tag.stringValue ?? (tag.isNull ? "" : tag.jsonText)
                let name: String
                if template.contains("{value}") {
                    guard !value.isEmpty else { continue }
                    name = template.replacingOccurrences(of: "{value}", with: value)
                } else {
                    guard !["", "0", "false"].contains(value) else { continue }
                    name = template
                }
                if InterestName.isValid(name) {
                    interests.append(.string(name))
                } else {
                    notes.append("mapped tags that are not interest names dropped")
                }
            }
            line["interests"] = .array(interests)
        }
        if let id = row["id"], !id.isEmpty { line["metadata"] = .object(["oneSignalId": .string(id)]) }
        return (.success(.object(line)), notes)
    }
}
