import Foundation
import JSON
import PushStore

/// What a queued publish needs to run, built once at intake and stored with the job (`PublishJob.payload`):
/// the finished APNs payload and header fields (identical for every device; only the token and environment vary)
/// and the original request body for webhooks.
struct PublishPlan: Sendable, Equatable {
    static let version = 1

    /// Platforms the request carried; `fcm`/`web` are reported as unsupported.
    var platforms: [String]
    /// The APNs payload, nil when the publish carries no `apns` part.
    var apnsPayload: [UInt8]?
    var pushType: String?
    var priority: Int?
    var expiration: Int?
    var collapseID: String?
    /// The request body as received (webhooks echo it as `requestBody`).
    var requestBody: JSONValue

    init(request: PublishRequest, body: [UInt8], instanceID: String, publishID: String) {
        platforms = request.platforms
        apnsPayload = request.apns?.payload(instanceID: instanceID, publishID: publishID)
        pushType = request.apns?.pushType
        priority = request.apns?.priority
        expiration = request.apns?.expiration
        collapseID = request.apns?.collapseID
        requestBody = JSONValue.parse(body) ?? .null
    }

    var unsupportedPlatforms: [String] { platforms.filter { $0 != "apns" } }

    func encoded() -> Data {
        var object: [String: JSONValue] = [
            "v": .int(Self.version),
            "platforms": .array(platforms.map(JSONValue.string)),
            "requestBody": requestBody,
        ]
        if let apnsPayload { object["apnsPayload"] = .string(String(decoding: apnsPayload, as: UTF8.self)) }
        if let pushType { object["pushType"] = .string(pushType) }
        if let priority { object["priority"] = .int(priority) }
        if let expiration { object["expiration"] = .int(expiration) }
        if let collapseID { object["collapseId"] = .string(collapseID) }
        return Data(JSONValue.object(object).serialized())
    }

    /// Decodes a stored plan. - Throws: `PublishPlanError` for a plan this version cannot read.
    init(decoding data: Data) throws(PublishPlanError) {
        guard let object = JSONValue.parse(data)?.objectValue, object["v"]?.intValue == Self.version else {
            throw PublishPlanError()
        }
        platforms = object["platforms"]?.arrayValue?.compactMap(\.stringValue) ?? []
        apnsPayload = object["apnsPayload"]?.stringValue.map { Array($0.utf8) }
        pushType = object["pushType"]?.stringValue
        priority = object["priority"]?.intValue
        expiration = object["expiration"]?.intValue
        collapseID = object["collapseId"]?.stringValue
        requestBody = object["requestBody"] ?? .null
    }
}

/// A stored plan that this version cannot read (written by a newer server, or damaged).
struct PublishPlanError: Error, Sendable, CustomStringConvertible {
    var description: String { "unreadable publish plan" }
}

/// Counter names a publish accumulates in the store; the status API and metrics read them.
enum PublishCounter {
    /// Devices the publish was attempted for.
    static let targets = "targets"
    /// APNs answered 200.
    static let accepted = "apns.accepted"
    /// Devices invalidated because of this publish (410 after the last registration, bad token).
    static let devicesRemoved = "devices.removed"
    /// Requests re-sent to the other environment after a BadDeviceToken on a defaulted environment.
    static let environmentRetries = "apns.environmentRetries"
    /// Environment corrections that the retry confirmed.
    static let environmentCorrected = "devices.environmentCorrected"
    /// APNs (or the local rules) refused: `apns.failed.<Reason>`.
    static func failed(_ reason: String) -> String { "apns.failed.\(reason)" }
    static let failedPrefix = "apns.failed."

    /// APNs failures by reason: the `apns.failed.<Reason>` counters with the prefix removed.
    static func failures(in counters: [String: Int64]) -> [String: Int64] {
        var out: [String: Int64] = [:]
        for (key, value) in counters where key.hasPrefix(failedPrefix) {
            out[String(key.dropFirst(failedPrefix.count))] = value
        }
        return out
    }
}

extension PublishStatus {
    /// APNs failures by reason (`apns.failed.<Reason>` counters with the prefix removed).
    var failedByReason: [String: Int64] { PublishCounter.failures(in: counters) }

    var accepted: Int64 { counters[PublishCounter.accepted] ?? 0 }
    var failed: Int64 { failedByReason.values.reduce(0, +) }
}
