/// The `apns-push-type` header: what the notification is, which decides the topic suffix and the priorities APNs
/// accepts (docs/APNS.md §2.2).
package enum APNsPushType: String, Sendable, Hashable, CaseIterable {
    case alert
    case background
    case complication
    case controls
    case fileprovider
    case liveactivity
    case location
    case mdm
    case pushtotalk
    case voip
    case widgets

    /// What Apple requires after the bundle ID in `apns-topic` for this push type. `mdm` has none: its topic is
    /// the UID from the MDM certificate, taken as given.
    package var topicSuffix: String {
        switch self {
        case .alert, .background, .mdm: return ""
        case .complication: return ".complication"
        case .controls: return ".push-type.controls"
        case .fileprovider: return ".pushkit.fileprovider"
        case .liveactivity: return ".push-type.liveactivity"
        case .location: return ".location-query"
        case .pushtotalk: return ".voip-ptt"
        case .voip: return ".voip"
        case .widgets: return ".push-type.widgets"
        }
    }

    /// Whether APNs accepts this push type only with token authentication (Apple: certificate-based connections
    /// support "only a subset of push types"; `liveactivity` and `location` are documented token-only).
    package var requiresTokenAuthentication: Bool { self == .liveactivity || self == .location }

    /// The largest payload APNs accepts for this push type, in bytes: 5120 for VoIP, 4096 otherwise.
    package var maxPayloadBytes: Int { self == .voip ? 5120 : 4096 }
}
