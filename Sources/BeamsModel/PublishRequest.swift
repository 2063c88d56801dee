import Foundation
import HTTPClient
import JSON
import PushStore

/// A validated Beams publish request (docs/BEAMS-PROTOCOL.md §2.2).
public struct PublishRequest: Sendable, Equatable {
    package static let maxInterests = 100
    package static let maxUsers = 1000
    package static let maxUserIDBytes = 164
    /// Body limits of the two endpoints, as the Beams docs state them.
    package static let interestsBodyLimit = 10 * 1024
    package static let usersBodyLimit = 200 * 1024

    package var kind: PublishKind
    /// Interest names (de-duplicated, in request order) or user ids.
    package var targets: [String]
    package var webhookURL: String?
    /// The APNs part, nil when the publish carries only `fcm`/`web`.
    package var apns: APNsTemplate?
    /// The `fcm` part as sent (legacy FCM names); mapped and validated by `FCMMessageTemplate` when the plan is
    /// built, since the mapping needs the publish id.
    package var fcm: JSONValue?
    /// The `web` part, nil when absent.
    package var web: WebTemplate?
    /// The `unifiedpush` part (beyond Beams), nil when absent.
    var unifiedpush: UnifiedPushTemplate? = nil
    /// The `hms` part as sent (beyond Beams); mapped and validated by `HMSTemplate` when the plan is built, since
    /// its data carries the publish id.
    var hms: [String: JSONValue]? = nil
    /// Platforms present in the request (`apns`, `fcm`, `web`, `unifiedpush`), reported in the publish status.
    package var platforms: [String]
    /// The `x_delivery` extension as sent (validated by `DeliveryOptions.resolve`, which needs the clock and the
    /// instance's limits); nil when absent.
    public var deliveryMember: JSONValue? = nil
    /// The `x_live_activity` extension as sent (validated by `LiveActivityPayload.parse`, which needs the intake
    /// time for `aps.timestamp`); nil when absent.
    var liveActivityMember: JSONValue? = nil

    /// Validates a request body.
    /// - Throws: `BeamsError` with Beams' statuses: 400 for unreadable JSON, 422 with a backticked JSON path for
    ///   schema violations.
    /// Whom a Beams publish request addresses: the two publish endpoints (channels have `BroadcastPublishRequest`).
    public enum Audience: Sendable {
        case interests
        case users

        /// The kind of job the request is queued as.
        package var kind: PublishKind {
            switch self {
            case .interests: .interests
            case .users: .users
            }
        }
    }

    public static func parse(_ body: [UInt8], kind audience: Audience) throws(BeamsError) -> PublishRequest {
        guard let document = JSONValue.parse(body), let root = document.objectValue else {
            throw .invalidJSON
        }
        let targets: [String]
        switch audience {
        case .interests:
            let names = try stringArray(root, "interests", min: 1, max: maxInterests)
            for (index, name) in names.enumerated() {
                if name.utf8.count > InterestName.maxLength {
                    throw .schema(
                        "interests.\(index)", "String length must be less than or equal to \(InterestName.maxLength)")
                }
                if !InterestName.isValid(name) {
                    throw .schema("interests.\(index)", "Does not match pattern '\(InterestName.pattern)'")
                }
            }
            var seen = Set<String>()
            targets = names.filter { seen.insert($0).inserted }
        case .users:
            let users = try stringArray(root, "users", min: 1, max: maxUsers)
            for (index, user) in users.enumerated() {
                if user.isEmpty { throw .schema("users.\(index)", "String length must be greater than or equal to 1") }
                if user.utf8.count > maxUserIDBytes {
                    throw .schema("users.\(index)", "User ids must be no more than \(maxUserIDBytes) bytes")
                }
            }
            if Set(users).count != users.count { throw .schema("users", "array items must be unique") }
            targets = users
        }

        var webhookURL: String?
        if let value = root["webhookUrl"], !value.isNull {
            guard let url = value.stringValue else { throw .schema("webhookUrl", typeMessage("string", value)) }
            // libcurl's own parser, so the URL accepted here is the one the webhook client will request. Where it
            // points is judged at send time, on the resolved address (DNS can change after the publish).
            do {
                _ = try HTTPURL(url)
            } catch .unsupportedScheme {
                throw .schema("webhookUrl", "Only http and https webhook URLs are supported")
            } catch {
                throw .schema("webhookUrl", "Does not match format 'uri'")
            }
            webhookURL = url
        }

        var platforms: [String] = []
        for platform in ["apns", "fcm", "web", UnifiedPushTemplate.section, HMSTemplate.section] {
            guard let value = root[platform], !value.isNull else { continue }
            guard value.objectValue != nil else { throw .schema(platform, typeMessage("object", value)) }
            platforms.append(platform)
        }
        guard !platforms.isEmpty else {
            throw .schema("(root)", "at least one of apns, fcm or web is required")
        }
        var apns: APNsTemplate?
        if let object = root["apns"]?.objectValue { apns = try APNsTemplate.parse(object) }
        var web: WebTemplate?
        if let object = root["web"]?.objectValue { web = try WebTemplate.parse(object) }
        let fcm = root["fcm"].flatMap { $0.objectValue != nil ? $0 : nil }
        var request = PublishRequest(
            kind: audience.kind, targets: targets, webhookURL: webhookURL, apns: apns,
            fcm: fcm, web: web, platforms: platforms)
        if let object = root[UnifiedPushTemplate.section]?.objectValue {
            request.unifiedpush = try UnifiedPushTemplate.parse(object)
        }
        if let object = root[HMSTemplate.section]?.objectValue {
            // Checked here too (with placeholder ids), so a bad section is refused by every intake path.
            _ = try HMSTemplate.parse(object, instanceID: "", publishID: "")
            request.hms = object
        }
        let member = root[DeliveryOptions.member]
        request.deliveryMember = member?.isNull == false ? member : nil
        let liveActivity = root[LiveActivityPayload.member]
        request.liveActivityMember = liveActivity?.isNull == false ? liveActivity : nil
        return request
    }

    private static func stringArray(_ root: [String: JSONValue], _ key: String, min: Int, max: Int) throws(BeamsError)
        -> [String]
    {
        guard let value = root[key], !value.isNull else { throw .schema(key, "\(key) is required") }
        guard let array = value.arrayValue else { throw .schema(key, typeMessage("array", value)) }
        if array.count < min { throw .schema(key, "Array must have at least \(min) items") }
        if array.count > max { throw .schema(key, "Array must have at most \(max) items") }
        var strings: [String] = []
        strings.reserveCapacity(array.count)
        for (index, element) in array.enumerated() {
            guard let string = element.stringValue else {
                throw .schema("\(key).\(index)", typeMessage("string", element))
            }
            strings.append(string)
        }
        return strings
    }

    package static func typeMessage(_ expected: String, _ given: JSONValue) -> String {
        let name: String
        switch given {
        case .int: name = "integer"
        default: name = given.typeName
        }
        return "Invalid type. Expected: \(expected), given: \(name)"
    }
}
