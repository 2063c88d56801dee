/// Why a publish's `fcm` section cannot become an FCM HTTP v1 message. `path` names the member, e.g.
/// `fcm.notification.color`, so the publisher's error can point at it.
package enum FCMPayloadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The member should be a JSON object.
    case notAnObject(path: String)
    /// A member FCM does not know (or one the server sets itself); FCM answers `400 Unknown name` to those.
    case unknownField(path: String)
    /// A member of the wrong JSON type: where, and what was expected.
    case wrongType(path: String, expected: String)
    /// A member whose value FCM refuses: where, and why.
    case invalidValue(path: String, reason: String)
    /// A `data` key FCM reserves (`from`, `message_type`, `google…`, `gcm…`) or the server's own `pusher`.
    case reservedDataKey(String)
    /// The message (without the device token) is larger than FCM's 4096-byte limit.
    case tooLarge(bytes: Int, limit: Int)

    package var description: String {
        switch self {
        case .notAnObject(let path): return "\(path) must be an object"
        case .unknownField(let path): return "\(path) is not a field FCM accepts"
        case .wrongType(let path, let expected): return "\(path) must be \(expected)"
        case .invalidValue(let path, let reason): return "\(path) is invalid: \(reason)"
        case .reservedDataKey(let key): return "fcm.data cannot contain the key \"\(key)\""
        case .tooLarge(let bytes, let limit):
            return "the FCM message is \(bytes) bytes, more than FCM's limit of \(limit)"
        }
    }
}
