import FCMClient
import Foundation
import JSON
import PushStore
import WebPush

/// What a queued publish needs to run, built once at intake and stored with the job (`PublishJob.payload`):
/// per platform, what every device of that platform shares (only the token varies): the finished APNs payload
/// and header fields, the FCM message template, the Web Push body and TTL; and the original request body for
/// webhooks.
///
/// Stored plans are versioned: version 1 (APNs only, written before FCM and Web Push), version 2 (before
/// `x_delivery`) and version 3 (before Live Activities and broadcast channels) still load; version 4 added
/// `liveActivity` and `broadcast`; version 5 the `unifiedpush` part; version 6 the `hms` part.
public struct PublishPlan: Sendable, Equatable {
    package static let version = 6
    /// Versions `init(decoding:)` reads.
    static let readableVersions: ClosedRange<Int> = 1...version

    /// Platforms the request carried.
    package var platforms: [String]
    /// The APNs payload, nil when the publish carries no `apns` part.
    package var apnsPayload: [UInt8]?
    package var pushType: String?
    package var priority: Int?
    var expiration: Int?
    var collapseID: String?
    /// The FCM message without the token, nil when the publish carries no `fcm` part.
    package var fcm: FCMMessageTemplate?
    /// The Web Push body the Beams service worker reads, nil when the publish carries no `web` part.
    package var webPayload: [UInt8]?
    /// The Web Push `TTL`, seconds.
    package var webTimeToLive: Int?
    /// The UnifiedPush clear-text body (`UnifiedPushTemplate`), nil when the publish carries no `unifiedpush` part.
    package var unifiedPushPayload: [UInt8]?
    /// Its `TTL` (seconds), `Urgency` and `Topic`.
    var unifiedPushTimeToLive: Int?
    var unifiedPushUrgency: String?
    var unifiedPushTopic: String?
    /// The Huawei Push Kit `message` without its tokens (`HMSTemplate`), nil when the publish carries no `hms` part.
    package var hmsMessage: [String: JSONValue]?
    /// The request body as received (webhooks echo it as `requestBody`).
    package var requestBody: JSONValue
    /// Schedule, local time, expiry and pace (`x_delivery` with the instance's defaults); nil for an ordinary publish.
    package var delivery: DeliveryOptions?
    /// What the publish's targets are.
    package var mode: Mode = .devices

    /// What a publish targets; stored as the plan's `liveActivity` or `broadcast` member (none: devices), so
    /// plans written before the enum read the same.
    package enum Mode: Sendable, Equatable {
        /// The devices of its interests or users (the job's kind says which), by device token.
        case devices
        /// `x_live_activity`: the matched devices' Live Activity tokens, not their device tokens. Its payload is
        /// `apnsPayload`.
        case liveActivity(LiveActivityPayload)
        /// Broadcast channels (version 4): one APNs broadcast per channel, no device targets.
        case broadcast(BroadcastPlan)
    }

    /// The Live Activity part, nil unless `mode` is `.liveActivity`.
    package var liveActivity: LiveActivityPayload? {
        if case .liveActivity(let payload) = mode { return payload }
        return nil
    }

    /// The broadcast part, nil unless `mode` is `.broadcast`.
    package var broadcast: BroadcastPlan? {
        if case .broadcast(let plan) = mode { return plan }
        return nil
    }

    /// Whether a store may split it into shards of device ranges: only a publish to devices that goes out at
    /// once, unpaced (a local-time publish goes out in rounds; a paced one is sent by one run, since every shard's
    /// run would keep the whole publish's `throttlePerMinute` and together exceed it; Live Activity and broadcast
    /// targets are token rows or channels, not the device ranges shards cover).
    package var isShardable: Bool {
        mode == .devices && delivery?.localTime == nil && delivery?.throttlePerMinute == nil
    }

    /// - Throws: `BeamsError` 422 naming the member when the `fcm` or `web` part cannot become a message (too
    ///   large, a field FCM refuses): one bad payload is refused once, not sent as one error per device.
    public init(
        request: PublishRequest, body: [UInt8], instanceID: String, publishID: String,
        delivery: DeliveryOptions? = nil
    ) throws(BeamsError) {
        self.delivery = delivery
        platforms = request.platforms
        apnsPayload = request.apns?.payload(instanceID: instanceID, publishID: publishID)
        pushType = request.apns?.pushType
        priority = request.apns?.priority
        expiration = request.apns?.expiration
        collapseID = request.apns?.collapseID
        if let section = request.fcm {
            do {
                fcm = try FCMMessageTemplate(section: section, instanceID: instanceID, publishID: publishID)
            } catch {
                throw .schema(error.path, error.description)
            }
        }
        if let web = request.web {
            webPayload = try web.payload(instanceID: instanceID, publishID: publishID)
            webTimeToLive = web.timeToLive
        }
        if let unifiedpush = request.unifiedpush {
            unifiedPushPayload = try unifiedpush.payload(instanceID: instanceID, publishID: publishID)
            unifiedPushTimeToLive = unifiedpush.web.timeToLive
            unifiedPushUrgency = unifiedpush.urgency?.rawValue
            unifiedPushTopic = unifiedpush.topic
        }
        if let section = request.hms {
            hmsMessage = try HMSTemplate.parse(section, instanceID: instanceID, publishID: publishID).message
        }
        requestBody = JSONValue.parse(body) ?? .null
    }

    /// The UnifiedPush message every device of the publish gets; nil without a `unifiedpush` part (or a stored one
    /// that no longer validates).
    package var unifiedPushMessage: WebPushMessage? {
        guard let payload = unifiedPushPayload else { return nil }
        return try? WebPushMessage(
            payload: payload, ttl: unifiedPushTimeToLive ?? WebPushMessage.maxTTL,
            urgency: unifiedPushUrgency.flatMap(WebPushUrgency.init(rawValue:)), topic: unifiedPushTopic)
    }

    /// Makes this a Live Activity publish: its APNs payload, push type and priority are the activity's (Beams'
    /// `data.pusher` and `content-available` are never added to these pushes).
    public mutating func useLiveActivity(_ payload: LiveActivityPayload) {
        mode = .liveActivity(payload)
        apnsPayload = payload.payload()
        pushType = LiveActivityPayload.pushType
        priority = payload.priority
    }

    /// Which Live Activity rows the publish targets.
    package var liveActivitySelector: LiveActivitySelector? {
        liveActivity.map {
            LiveActivitySelector(
                kind: $0.event == .start ? .start : .update, attributesType: $0.attributesType,
                activityID: $0.activityID)
        }
    }

    /// Whether the publish has a part for `platform`: devices of other platforms are not sent to (as in Beams).
    package func carries(_ platform: Platform) -> Bool {
        switch platform {
        case .apns: return apnsPayload != nil
        case .fcm: return fcm != nil
        case .web: return webPayload != nil
        case .unifiedpush: return unifiedPushPayload != nil
        case .hms: return hmsMessage != nil
        }
    }

    public func encoded() -> Data {
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
        if let fcm {
            object["fcmMessage"] = .object(fcm.message)
            if fcm.validateOnly { object["fcmValidateOnly"] = .bool(true) }
        }
        if let webPayload { object["webPayload"] = .string(String(decoding: webPayload, as: UTF8.self)) }
        if let webTimeToLive { object["webTtl"] = .int(webTimeToLive) }
        if let unifiedPushPayload {
            var member: [String: JSONValue] = ["payload": .string(String(decoding: unifiedPushPayload, as: UTF8.self))]
            if let unifiedPushTimeToLive { member["ttl"] = .int(unifiedPushTimeToLive) }
            if let unifiedPushUrgency { member["urgency"] = .string(unifiedPushUrgency) }
            if let unifiedPushTopic { member["topic"] = .string(unifiedPushTopic) }
            object["unifiedpush"] = .object(member)
        }
        if let hmsMessage { object["hmsMessage"] = .object(hmsMessage) }
        if let delivery { object["delivery"] = Self.encode(delivery) }
        switch mode {
        case .devices:
            break
        case .liveActivity(let liveActivity):
            // Its aps and custom keys are in `apnsPayload`.
            var member: [String: JSONValue] = [
                "event": .string(liveActivity.event.rawValue), "attributesType": .string(liveActivity.attributesType),
                "priority": .int(liveActivity.priority),
            ]
            if let activityID = liveActivity.activityID { member["activityId"] = .string(activityID) }
            object["liveActivity"] = .object(member)
        case .broadcast(let broadcast):
            object["broadcast"] = broadcast.encoded()
        }
        return Data(JSONValue.object(object).serialized())
    }

    /// Decodes a stored plan (versions 1 to 4). - Throws: `PublishPlanError` for a plan this version cannot read.
    public init(decoding data: Data) throws(PublishPlanError) {
        guard let object = JSONValue.parse(data)?.objectValue, let version = object["v"]?.intValue,
            Self.readableVersions.contains(version)
        else {
            throw PublishPlanError()
        }
        platforms = object["platforms"]?.arrayValue?.compactMap(\.stringValue) ?? []
        apnsPayload = object["apnsPayload"]?.stringValue.map { Array($0.utf8) }
        pushType = object["pushType"]?.stringValue
        priority = object["priority"]?.intValue
        expiration = object["expiration"]?.intValue
        collapseID = object["collapseId"]?.stringValue
        if let message = object["fcmMessage"] {
            guard let members = message.objectValue else { throw PublishPlanError() }
            fcm = FCMMessageTemplate(
                storedMessage: members, validateOnly: object["fcmValidateOnly"]?.boolValue ?? false)
        }
        webPayload = object["webPayload"]?.stringValue.map { Array($0.utf8) }
        webTimeToLive = object["webTtl"]?.intValue
        if let stored = object["unifiedpush"] {
            guard let members = stored.objectValue, let payload = members["payload"]?.stringValue else {
                throw PublishPlanError()
            }
            unifiedPushPayload = Array(payload.utf8)
            unifiedPushTimeToLive = members["ttl"]?.intValue
            unifiedPushUrgency = members["urgency"]?.stringValue
            unifiedPushTopic = members["topic"]?.stringValue
        }
        if let stored = object["hmsMessage"] {
            guard let members = stored.objectValue else { throw PublishPlanError() }
            hmsMessage = members
        }
        requestBody = object["requestBody"] ?? .null
        if let stored = object["delivery"] {
            guard let members = stored.objectValue else { throw PublishPlanError() }
            delivery = try Self.decodeDelivery(members)
        }
        if let stored = object["liveActivity"] {
            guard let members = stored.objectValue,
                let event = members["event"]?.stringValue.flatMap({ LiveActivityPayload.Event(rawValue: $0) }),
                let type = members["attributesType"]?.stringValue, let apnsPayload,
                var root = JSONValue.parse(apnsPayload)?.objectValue,
                let aps = root.removeValue(forKey: "aps")?.objectValue
            else { throw PublishPlanError() }
            mode = .liveActivity(
                LiveActivityPayload(
                    event: event, attributesType: type, activityID: members["activityId"]?.stringValue,
                    priority: members["priority"]?.intValue ?? 5, aps: aps, extra: root))
        }
        if let stored = object["broadcast"] {
            guard let members = stored.objectValue, let plan = BroadcastPlan(decoding: members) else {
                throw PublishPlanError()
            }
            mode = .broadcast(plan)
        }
    }

    /// The moment after which nothing of the publish is sent: `x_delivery.expiresAt`, or for a scheduled publish
    /// without one, its APNs `expiration` (epoch seconds; 0 means "now or never" to APNs and is no window here).
    package var expiresAt: Date? {
        if let expiresAt = delivery?.expiresAt { return expiresAt }
        guard delivery?.isScheduled == true, let expiration, expiration > 0 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(expiration))
    }

    private static func encode(_ delivery: DeliveryOptions) -> JSONValue {
        func ms(_ date: Date) -> JSONValue { .int(Int(truncatingIfNeeded: date.millisecondsSince1970)) }
        var object: [String: JSONValue] = [:]
        if let sendAt = delivery.sendAt { object["sendAt"] = ms(sendAt) }
        if let localTime = delivery.localTime { object["localTime"] = .string(localTime.description) }
        if let from = delivery.localTimeFrom { object["localTimeFrom"] = ms(from) }
        if let zone = delivery.defaultTimeZone { object["defaultTimeZone"] = .string(zone) }
        if let expiresAt = delivery.expiresAt { object["expiresAt"] = ms(expiresAt) }
        if let rate = delivery.throttlePerMinute { object["throttlePerMinute"] = .int(rate) }
        return .object(object)
    }

    private static func decodeDelivery(_ object: [String: JSONValue]) throws(PublishPlanError) -> DeliveryOptions {
        func date(_ key: String) -> Date? {
            object[key]?.intValue.map { Date(millisecondsSince1970: Int64($0)) }
        }
        var delivery = DeliveryOptions()
        delivery.sendAt = date("sendAt")
        if let text = object["localTime"]?.stringValue {
            guard let time = LocalTime(text) else { throw PublishPlanError() }
            delivery.localTime = time
        }
        delivery.localTimeFrom = date("localTimeFrom")
        delivery.defaultTimeZone = object["defaultTimeZone"]?.stringValue
        delivery.expiresAt = date("expiresAt")
        delivery.throttlePerMinute = object["throttlePerMinute"]?.intValue
        return delivery
    }
}

/// A stored plan that this version cannot read (written by a newer server, or damaged).
public struct PublishPlanError: Error, Sendable, CustomStringConvertible {
    public var description: String { "unreadable publish plan" }
}

extension PublishStatus {
    /// APNs failures by reason.
    package var failedByReason: [String: Int64] { counters.failures(on: .apns) }

    package var accepted: Int64 { counters[.accepted(.apns)] ?? 0 }
    package var failed: Int64 { failedByReason.values.reduce(0, +) }

    package func accepted(on platform: Platform) -> Int64 { counters[.accepted(platform)] ?? 0 }
    package func failedByReason(on platform: Platform) -> [String: Int64] { counters.failures(on: platform) }
    package func failed(on platform: Platform) -> Int64 { failedByReason(on: platform).values.reduce(0, +) }
}
