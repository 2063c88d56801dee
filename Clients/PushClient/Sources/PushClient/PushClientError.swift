/// Why a call failed. Server errors carry the `description` of the server's `{"error","description"}` body.
public enum PushClientError: Error, Equatable, Sendable {
    /// The call needs a registered device: call `start(deviceToken:environment:)`, `start(hmsToken:)` or
    /// `start(unifiedPush:)` first (for `updateHMSToken`/`updateUnifiedPush`: on that platform).
    case notStarted
    /// Interest names are 1-164 characters of `a-z A-Z 0-9 _ - = @ , . ;` (checked before any request).
    case invalidInterest(String)
    /// The device token is not an even number of hex digits, the HMS token not 1-512 printable characters, or the
    /// UnifiedPush endpoint not an https URL with keys (checked before any request).
    case invalidDeviceToken(String)
    /// The user id is empty or longer than 164 bytes (checked before any request).
    case invalidUserID(String)
    /// The device is bound to another user; a device's user cannot change (call `stop()` first).
    case userAlreadySet(current: String)
    /// 400: the request is wrong and retrying cannot help.
    case badRequest(String)
    /// 401/403 about the device token: the server refused the APNs token.
    case badDeviceToken(String)
    /// 401/403 otherwise: the Beams token from the token provider was refused.
    case unauthorized(String)
    /// 404 on registration: no such instance on this server.
    case instanceNotFound(String)
    /// The server said the device could not be created (not retried, like the Beams SDK).
    case couldNotCreateDevice
    /// The token provider failed.
    case tokenProvider(String)
    /// `RetryPolicy.maxAttempts` attempts failed with retryable errors; the last one is described.
    case gaveUp(attempts: Int, lastError: String)
    /// The state store could not save.
    case storage(String)
    /// 413/422 on a Live Activity call: the server refused it (the device holds its bound of rows, or a member is
    /// invalid); not retried.
    case refused(String)
    /// A Live Activity attributes type, activity id, reference or token the server would refuse (checked before any
    /// request).
    case invalidLiveActivity(String)
}
