/// A header or payload rule broken by a request, found locally before anything is sent.
package enum APNsViolation: Error, Sendable, Hashable, CustomStringConvertible {
    /// The device token is empty.
    case emptyDeviceToken
    /// The device token has a character outside `0-9a-fA-F`.
    case deviceTokenNotHex
    /// The device token has an odd number of hex digits (tokens are whole bytes).
    case deviceTokenOddLength
    /// `apns-topic` would be empty.
    case emptyTopic
    /// The topic carries another push type's suffix (e.g. `.voip` on an `alert`).
    case topicDoesNotMatchPushType(topic: String, pushType: APNsPushType)
    /// Priority 10 was asked for a `background` push; APNs rejects it.
    case backgroundWithImmediatePriority
    /// APNs rejects empty payloads (`PayloadEmpty`).
    case emptyPayload
    /// The payload is over the push type's limit (4096 bytes, 5120 for VoIP).
    case payloadTooLarge(bytes: Int, limit: Int)
    /// The payload is not a JSON object (checked only when the push type must be inferred from it).
    case payloadNotJSONObject
    /// `apns-collapse-id` is over 64 bytes.
    case collapseIDTooLong(bytes: Int)
    /// `apns-id` is not a canonical UUID (8-4-4-4-12 hex).
    case invalidAPNsID
    /// `apns-expiration` is before the UNIX epoch.
    case invalidExpiration
    /// A header value (topic, collapse id) contains a control character such as CR or LF, which would let it
    /// forge another header.
    case controlCharacterInHeader(name: String)
    /// The push type is token-only (`liveactivity`, `location`) and the credentials are a certificate.
    case pushTypeNeedsTokenAuthentication(APNsPushType)

    /// A short, bounded name for logs and metric labels.
    package var code: String {
        switch self {
        case .emptyDeviceToken: return "empty_device_token"
        case .deviceTokenNotHex: return "device_token_not_hex"
        case .deviceTokenOddLength: return "device_token_odd_length"
        case .emptyTopic: return "empty_topic"
        case .topicDoesNotMatchPushType: return "topic_push_type_mismatch"
        case .backgroundWithImmediatePriority: return "background_priority_10"
        case .emptyPayload: return "empty_payload"
        case .payloadTooLarge: return "payload_too_large"
        case .payloadNotJSONObject: return "payload_not_json_object"
        case .collapseIDTooLong: return "collapse_id_too_long"
        case .invalidAPNsID: return "invalid_apns_id"
        case .invalidExpiration: return "invalid_expiration"
        case .controlCharacterInHeader: return "control_character_in_header"
        case .pushTypeNeedsTokenAuthentication: return "push_type_needs_token_authentication"
        }
    }

    package var description: String {
        switch self {
        case .topicDoesNotMatchPushType(let topic, let pushType):
            return "\(code): topic \(topic) does not fit push type \(pushType.rawValue)"
        case .payloadTooLarge(let bytes, let limit):
            return "\(code): \(bytes) bytes, limit \(limit)"
        case .collapseIDTooLong(let bytes):
            return "\(code): \(bytes) bytes, limit 64"
        case .pushTypeNeedsTokenAuthentication(let pushType):
            return
                "\(code): APNs accepts \(pushType.rawValue) pushes only with token (.p8) authentication, not a certificate"
        default:
            return code
        }
    }
}
