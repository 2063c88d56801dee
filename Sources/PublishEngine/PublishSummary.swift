import BeamsModel
import PushStore

/// The finished publish's `summary`: one note per platform the instance has no credentials for, and only when
/// the publish had devices on it. A publish to iOS devices alone says nothing about FCM or Web Push, however its
/// body's `fcm` and `web` sections read. Pure, tested without a store.
package enum PublishSummary {
    /// The reason each platform's deliveries get without credentials, and the note a publish then carries.
    static let notConfigured: [(platform: Platform, reason: String, note: String)] = [
        (.apns, "NoAPNsCredentials", "no APNs credentials configured: nothing was sent"),
        (.fcm, "NoFCMCredentials", "no FCM credentials configured: nothing was sent to Android devices"),
        (.web, "NoWebPushCredentials", "no Web Push (VAPID) key configured: nothing was sent to browsers"),
        (
            .unifiedpush, "NoUnifiedPushConfig",
            "no unifiedpush section configured: nothing was sent to UnifiedPush devices"
        ),
        (.hms, "NoHMSCredentials", "no hms section configured: nothing was sent to Huawei devices"),
    ]

    /// The summary for a publish whose counters over every run are `counters`; nil when there is nothing to say.
    static func notes(counters: PublishCounters) -> String? {
        let notes = notConfigured.compactMap { entry -> String? in
            (counters[.failed(entry.platform, reason: entry.reason)] ?? 0) > 0 ? entry.note : nil
        }
        return notes.isEmpty ? nil : notes.joined(separator: "; ")
    }
}
