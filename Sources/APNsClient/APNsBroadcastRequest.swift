import Foundation

/// One broadcast push to a channel (`POST /4/broadcasts/apps/<bundle>`), transport-agnostic: APNs fans it out to
/// every Live Activity subscribed to the channel. No `apns-topic` and no device token, unlike `/3/device`.
package struct APNsBroadcastRequest: Sendable, Equatable {
    /// The largest body APNs accepts for a broadcast: 5 KB.
    package static let maxPayloadBytes = 5120

    package var channelID: APNsChannelID
    /// The JSON payload (`{"aps":{"event":"update",…}}`), sent as is.
    package var payload: [UInt8]
    /// `apns-priority`: 5 (the default: no draw on the activity's update budget) or 10.
    package var priority: APNsPriority
    /// `apns-expiration`, epoch seconds; 0 ("deliver once, do not store") is the default and the only value a
    /// no-storage channel accepts.
    package var expiration: Int
    /// `apns-request-id`, a canonical UUID; nil lets APNs generate one (returned in the response).
    package var requestID: String?

    package init(
        channelID: APNsChannelID, payload: [UInt8], priority: APNsPriority = .powerConsidered,
        expiration: Int = 0, requestID: String? = nil
    ) {
        self.channelID = channelID
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
    }

    package func path(bundleID: APNsBundleID) -> String { "/4/broadcasts/apps/\(bundleID.rawValue)" }

    /// `name: value` lines besides `authorization`.
    package var headers: [String] {
        var lines = [
            "apns-channel-id: " + channelID.rawValue,
            "apns-push-type: liveactivity",
            "apns-priority: " + String(priority.rawValue),
            "apns-expiration: " + String(expiration),
            "content-type: application/json",
        ]
        if let requestID { lines.append("apns-request-id: " + requestID) }
        return lines
    }

    /// Checks what APNs would refuse, before anything is sent.
    package func validate() throws(APNsBroadcastViolation) {
        if payload.isEmpty { throw .emptyPayload }
        if payload.count > Self.maxPayloadBytes { throw .payloadTooLarge(bytes: payload.count) }
        if expiration < 0 { throw .invalidExpiration }
        if let requestID, UUID(uuidString: requestID) == nil || requestID.utf8.count != 36 { throw .invalidRequestID }
    }
}

/// A broadcast or channel request refused locally, before anything is sent.
package enum APNsBroadcastViolation: Error, Sendable, Hashable, CustomStringConvertible {
    case emptyPayload
    /// Over `APNsBroadcastRequest.maxPayloadBytes`.
    case payloadTooLarge(bytes: Int)
    /// `apns-expiration` before the epoch.
    case invalidExpiration
    /// `apns-request-id` is not a canonical UUID.
    case invalidRequestID
    /// The management or send base URL cannot be used.
    case invalidURL(String)

    package var description: String {
        switch self {
        case .emptyPayload: return "empty_payload"
        case .payloadTooLarge(let bytes):
            return "payload_too_large: \(bytes) bytes, limit \(APNsBroadcastRequest.maxPayloadBytes)"
        case .invalidExpiration: return "invalid_expiration"
        case .invalidRequestID: return "invalid_request_id"
        case .invalidURL(let url): return "invalid_url: \(url)"
        }
    }
}
