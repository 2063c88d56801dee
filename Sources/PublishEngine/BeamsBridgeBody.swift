import JSON

/// The body the bridge forwards, and the same body the local publish is planned from (docs/MIGRATING.md,
/// "Duplicates while both run"): for a device that is still registered at both (the app has moved, Beams has not retired
/// it yet), a shared collapse id lets APNs show one of the two notifications and a shared Android `tag` lets the
/// second replace the first in the drawer. Values the publisher set are kept. Web is left alone: a browser holds
/// one subscription per service worker, so it cannot be registered at both.
package enum BeamsBridgeBody {
    /// `body` with `apns.collapse_id`, `fcm.collapse_key` and (for a notification) `fcm.notification.tag` set to
    /// `publishID` where the publisher set none, serialized; the same bytes when nothing changes or it does not
    /// parse (the publish API refuses it then anyway).
    package static func withCollapseIDs(_ body: [UInt8], publishID: String) -> [UInt8] {
        guard var root = JSONValue.parse(body)?.objectValue else { return body }
        var changed = false
        if var apns = root["apns"]?.objectValue, apns["collapse_id"] == nil {
            apns["collapse_id"] = .string(publishID)
            root["apns"] = .object(apns)
            changed = true
        }
        if var fcm = root["fcm"]?.objectValue {
            if fcm["collapse_key"] == nil {
                fcm["collapse_key"] = .string(publishID)
                changed = true
            }
            if var notification = fcm["notification"]?.objectValue, notification["tag"] == nil {
                notification["tag"] = .string(publishID)
                fcm["notification"] = .object(notification)
                changed = true
            }
            root["fcm"] = .object(fcm)
        }
        return changed ? JSONValue.object(root).serialized() : body
    }

    /// The members of a publish Beams defines: the targets and its three platforms (docs/BEAMS-PROTOCOL.md §2.2).
    static let beamsMembers: Set<String> = ["interests", "users", "apns", "fcm", "web"]

    /// What is forwarded to Beams: `body` without the members Beams does not define (push-server's `x_…`
    /// extensions, `hms` and `unifiedpush` sections, which Beams' schema would refuse or Beams' devices cannot use)
    /// and without `webhookUrl` (push-server calls it for its own publish; Beams would call it again with its own
    /// publish id). The same bytes when nothing is removed; nil when no `apns`, `fcm` or `web` section is left
    /// (nothing for a device at Beams: not forwarded).
    package static func forBeams(_ body: [UInt8]) -> [UInt8]? {
        guard let root = JSONValue.parse(body)?.objectValue else { return nil }
        guard root.keys.contains(where: { ["apns", "fcm", "web"].contains($0) }) else { return nil }
        let kept = root.filter { beamsMembers.contains($0.key) }
        return kept.count == root.count ? body : JSONValue.object(kept).serialized()
    }
}
