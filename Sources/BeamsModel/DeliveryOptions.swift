import Foundation
import JSON

/// The publish extension beyond Beams (docs/API.md "Scheduled, local-time and throttled publishes"): one
/// namespaced object, `x_delivery`, that Beams never defined, so it cannot collide with the keys the SDKs add
/// (`interests`, `users`) or Beams' own (`apns`, `fcm`, `web`, `webhookUrl`). The same object may come as the
/// `X-Push-Delivery` header (compact JSON) for SDKs that drop unknown body keys.
///
/// ```json
/// "x_delivery": {"sendAt": "2026-12-24T18:00:00+01:00", "deliverAtLocalTime": "09:00",
///                "expiresAt": "2026-12-25T12:00:00Z", "throttlePerMinute": 60000}
/// ```
public struct DeliveryOptions: Sendable, Equatable {
    /// The body member and the header (lower case, as `HTTPHeaders` looks names up) that carry the object.
    static let member = "x_delivery"
    package static let header = "x-push-delivery"
    /// Fastest pace a publish may ask for (100,000 per second); an instance's `maxThrottlePerMinute` lowers it.
    package static let maxThrottlePerMinute = 6_000_000
    /// Longest `X-Push-Delivery` header read.
    static let maxHeaderBytes = 1024
    /// How far in the past `sendAt` may lie (clock skew, a retried request): it then means "now".
    static let maxPastSendAt: TimeInterval = 86_400

    /// Not before this moment (nil: at once).
    package var sendAt: Date?
    /// Deliver at this wall-clock time in each device's zone, at or after `localTimeFrom`.
    package var localTime: LocalTime?
    /// `sendAt`, or the publish time: the moment local times are counted from (fixed at intake).
    package var localTimeFrom: Date?
    /// The zone of devices without one, fixed at intake (a later config change does not move this publish).
    package var defaultTimeZone: String?
    /// Nothing is sent after this moment: a publish (or round) that could not start before it ends `expired`.
    package var expiresAt: Date?
    /// Deliveries per minute, paced evenly; nil: as fast as the senders go.
    package var throttlePerMinute: Int?

    /// No options: delivered at once, at the senders' pace (tests set the fields they need).
    package init() {}

    /// Whether the publish waits for a time.
    var isScheduled: Bool { sendAt != nil || localTime != nil }

    /// What an instance allows and defaults to (`instances[].delivery`, `engine.maxScheduleDays`).
    public struct Limits: Sendable, Equatable {
        package var maxScheduleDays = 30
        var defaultTimeZone = "UTC"
        package var defaultThrottlePerMinute: Int?
        package var maxThrottlePerMinute: Int?

        public init(
            maxScheduleDays: Int = 30, defaultTimeZone: String = "UTC", defaultThrottlePerMinute: Int? = nil,
            maxThrottlePerMinute: Int? = nil
        ) {
            self.maxScheduleDays = maxScheduleDays
            self.defaultTimeZone = defaultTimeZone
            self.defaultThrottlePerMinute = defaultThrottlePerMinute
            self.maxThrottlePerMinute = maxThrottlePerMinute
        }
    }

    /// The publish's delivery options: the request's object (body member or header, not both), with the
    /// instance's defaults applied. - Returns: nil when nothing applies (an ordinary publish).
    /// - Throws: `BeamsError` 422 naming the member.
    public static func resolve(member: JSONValue?, header: String?, now: Date, limits: Limits) throws(BeamsError)
        -> DeliveryOptions?
    {
        var options: DeliveryOptions?
        let member: JSONValue? = member?.isNull == false ? member : nil
        if let header {
            guard member == nil else {
                throw .schema(Self.member, "give \(Self.member) in the body or the X-Push-Delivery header, not both")
            }
            guard header.utf8.count <= maxHeaderBytes, let value = JSONValue.parse(Array(header.utf8)) else {
                throw BeamsError(
                    422, "Unprocessable Entity",
                    "X-Push-Delivery must be a JSON object of at most \(maxHeaderBytes) bytes")
            }
            options = try parse(value, path: Self.member, now: now, limits: limits)
        } else if let member {
            options = try parse(member, path: Self.member, now: now, limits: limits)
        }
        if options?.throttlePerMinute == nil, let rate = limits.defaultThrottlePerMinute {
            options = options ?? DeliveryOptions()
            options?.throttlePerMinute = rate
        }
        return options
    }

    static func parse(_ value: JSONValue, path p: String, now: Date, limits: Limits) throws(BeamsError)
        -> DeliveryOptions
    {
        guard let object = value.objectValue else { throw .schema(p, PublishRequest.typeMessage("object", value)) }
        let known: Set<String> = ["sendAt", "deliverAtLocalTime", "expiresAt", "throttlePerMinute"]
        // A typo (`sendat`) would otherwise send at once: unknown members are refused.
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw .schema("\(p).\(unknown)", "Additional property \(unknown) is not allowed")
        }
        let horizon = now.addingTimeInterval(TimeInterval(limits.maxScheduleDays) * 86_400)
        var options = DeliveryOptions()
        if let value = object["sendAt"], !value.isNull {
            let sendAt = try moment(value, "\(p).sendAt")
            guard sendAt >= now.addingTimeInterval(-maxPastSendAt) else {
                throw .schema("\(p).sendAt", "must not lie more than 24 hours in the past")
            }
            guard sendAt <= horizon else {
                throw .schema("\(p).sendAt", "must lie within \(limits.maxScheduleDays) days (engine.maxScheduleDays)")
            }
            options.sendAt = sendAt > now ? sendAt : nil
        }
        if let value = object["deliverAtLocalTime"], !value.isNull {
            guard let text = value.stringValue else {
                throw .schema("\(p).deliverAtLocalTime", PublishRequest.typeMessage("string", value))
            }
            guard let time = LocalTime(text) else {
                throw .schema("\(p).deliverAtLocalTime", "must be a 24-hour time HH:MM or HH:MM:SS, e.g. \"09:00\"")
            }
            options.localTime = time
            options.localTimeFrom = max(options.sendAt ?? now, now)
            options.defaultTimeZone = limits.defaultTimeZone
        }
        if let value = object["expiresAt"], !value.isNull {
            let expiresAt = try moment(value, "\(p).expiresAt")
            guard expiresAt > now else { throw .schema("\(p).expiresAt", "lies in the past") }
            if let sendAt = options.sendAt, expiresAt <= sendAt {
                throw .schema("\(p).expiresAt", "must lie after sendAt")
            }
            // A local-time publish may need one more day to reach every zone.
            let limit = horizon.addingTimeInterval(options.localTime == nil ? 0 : 2 * 86_400)
            guard expiresAt <= limit else {
                throw .schema(
                    "\(p).expiresAt", "must lie within \(limits.maxScheduleDays) days (engine.maxScheduleDays)")
            }
            options.expiresAt = expiresAt
        }
        if let value = object["throttlePerMinute"], !value.isNull {
            let path = "\(p).throttlePerMinute"
            let maximum = min(maxThrottlePerMinute, limits.maxThrottlePerMinute ?? maxThrottlePerMinute)
            guard value.typeName == "number" else { throw .schema(path, PublishRequest.typeMessage("integer", value)) }
            guard let rate = value.intValue else {
                // 1.5 is refused as a fraction; 1e30 (a whole number beyond Int) as out of range.
                let whole = value.doubleValue.map { $0.isFinite && $0 == $0.rounded() } ?? false
                throw .schema(path, whole ? "must be between 1 and \(maximum)" : "must be a whole number")
            }
            guard rate >= 1, rate <= maximum else {
                throw .schema(path, "must be between 1 and \(maximum)")
            }
            options.throttlePerMinute = rate
        }
        return options
    }

    /// An RFC 3339 string with an offset, or whole seconds since 1970.
    private static func moment(_ value: JSONValue, _ path: String) throws(BeamsError) -> Date {
        if let seconds = value.intValue {
            // Bounded before it becomes a Date: the range checks that follow compare sane values only.
            guard (0...253_402_300_799).contains(seconds) else { throw .schema(path, "is out of range") }
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        guard let text = value.stringValue else {
            throw .schema(path, PublishRequest.typeMessage("string (RFC 3339) or integer (UNIX seconds)", value))
        }
        guard let date = RFC3339.parse(text) else {
            throw .schema(path, "must be an RFC 3339 time with an offset, e.g. 2026-12-24T09:00:00+01:00")
        }
        return date
    }
}
