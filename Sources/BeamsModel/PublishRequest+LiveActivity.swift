import Foundation

extension PublishRequest {
    /// The `x_live_activity` extension (docs/API.md "Publishing to Live Activities"), checked and stamped with the
    /// intake time; nil for an ordinary publish. A Live Activity publish carries only `apns` and no local-time
    /// delivery (an activity's content is current now, not at 9:00 in each zone).
    public func liveActivity(delivery: DeliveryOptions?, now: Date) throws(BeamsError) -> LiveActivityPayload? {
        guard let member = liveActivityMember else { return nil }
        if let other = platforms.first(where: { $0 != "apns" }) {
            throw .schema(other, "A Live Activity publish carries only apns")
        }
        if delivery?.localTime != nil {
            throw .schema(DeliveryOptions.member, "deliverAtLocalTime does not apply to Live Activity publishes")
        }
        let seconds = Int(now.timeIntervalSince1970.rounded(.down))
        return try LiveActivityPayload.parse(member: member, apns: apns, timestamp: seconds)
    }
}
