import Foundation
import JSON
import PushStore

/// What the Reporting API does with one well-formed event from a known device. Pure: the rules are tested without
/// a server.
///
/// The API has no secret: anyone who knows an instance id can post events. So nothing in the body is believed
/// beyond what it can only be claimed by the device itself:
/// - the device must exist (checked before this; an unknown device is a 400),
/// - the user is the device's stored binding, never the body's `userId` (which the SDKs send only as a hint),
/// - the publish must be one this server made and has started, and the device must have existed before it ended;
///   an event for anything else cannot have come from a delivery and is accepted but not recorded (a 400 would
///   only make the SDKs log it; a purged publish's late open is legitimate and simply no longer counted),
/// - the device must be in the publish's audience (`ReportedPublish.targetsDevice`: bound to one of its users, or
///   following one of its interests), or a device that was never sent anything could count deliveries and opens
///   (20 forged devices made a publish to nobody show 20 delivered, 20 opened),
/// - the user webhooks (`v1.UserNotificationAcknowledgement` / `Open`) fire only for a users publish, which then
///   targeted the device's user, as Beams sends them for "publish to users",
/// - the time is the device's `timestampSecs` clamped into [the later of the publish's and the device's creation,
///   the server's now]: a device clock ahead or behind cannot date events into the future (where retention would
///   never delete them) or before the notification existed.
public enum ReportingPolicy {
    public enum Verdict: Equatable {
        /// Record the event at `at` for `userID`; `notifyUser`: send the user webhook if the event is new.
        case record(at: Date, userID: String?, notifyUser: Bool)
        /// Answer 200 but record nothing.
        case ignore(IgnoredReason)
    }

    public enum IgnoredReason: String, Equatable {
        case unknownPublish = "unknown_publish"
        case publishNotStarted = "publish_not_started"
        case deviceNewerThanPublish = "device_newer_than_publish"
        case notTargeted = "not_targeted"
    }

    /// - Parameters:
    ///   - deviceCreatedAt, deviceUserID: the stored device (its first registration, its bound user).
    ///   - publish: the stored publish, nil when unknown.
    public static func judge(
        timestampSecs: Double, deviceCreatedAt: Date, deviceUserID: String?, publish: ReportedPublish?, now: Date
    ) -> Verdict {
        guard let publish else { return .ignore(.unknownPublish) }
        guard publish.startedAt != nil else { return .ignore(.publishNotStarted) }
        if let finished = publish.finishedAt, deviceCreatedAt > finished { return .ignore(.deviceNewerThanPublish) }
        guard publish.targetsDevice else { return .ignore(.notTargeted) }
        let earliest = max(publish.createdAt, deviceCreatedAt).timeIntervalSince1970
        let latest = max(earliest, now.timeIntervalSince1970)
        let at = Date(timeIntervalSince1970: min(max(timestampSecs, earliest), latest))
        return .record(at: at, userID: deviceUserID, notifyUser: publish.kind == .users)
    }

    /// `timestampSecs` as seconds: any finite JSON number (the SDKs send integers); nil for anything else.
    /// Never converts to an integer type, so no value can trap.
    public static func timestamp(_ value: JSONValue?) -> Double? {
        switch value {
        case .int(let seconds)?: return Double(seconds)
        case .double(let seconds)? where seconds.isFinite: return seconds
        default: return nil
        }
    }
}
