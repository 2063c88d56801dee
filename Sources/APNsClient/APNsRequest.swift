import Foundation
import HTTPClient

/// One notification to one device, transport-agnostic. Header rules are checked by `APNsHeaderRules` before any
/// byte is sent.
package struct APNsRequest: Sendable {
    /// The device token as hex (`:path` is `/3/device/<token>`). Any non-empty even length: Apple says not to
    /// assume 32 bytes.
    package var deviceToken: String
    /// The JSON payload, sent as is (uncompressed).
    package var payload: [UInt8]
    /// The app's bundle ID, or the full topic. The push type's suffix (`.voip`, …) is appended when missing.
    package var topic: String
    /// `nil` infers `alert` or `background` from the payload (see `APNsHeaderRules`).
    package var pushType: APNsPushType?
    /// `nil` sends APNs' default (10), or 5 when the push type is `background`.
    package var priority: APNsPriority?
    /// `nil` omits `apns-expiration` (APNs' storage policy applies); `Date(timeIntervalSince1970: 0)` means
    /// "deliver once, do not store".
    package var expiration: Date?
    /// `apns-collapse-id`, at most 64 bytes.
    package var collapseID: String?
    /// `apns-id`, a canonical UUID; `nil` lets APNs generate one (returned in the response).
    package var apnsID: String?
    /// No retry is scheduled past this moment (the publish's `expiresAt`, the `expiration`): one that would go out
    /// later ends `.expired`. Not a header. `nil`: only the retry policy's own bounds apply.
    package var retryDeadline: Date?
    /// The run the request belongs to: once it is cancelled, a retry ends `.cancelled` instead of going out.
    package var retries: RetryScope?
    /// The header rules' verdict on this request's fields other than the token, when the request was built from a
    /// template that worked it out once for all its requests (`APNsCheckedHeaders`); nil: every rule is checked.
    package var checkedHeaders: APNsCheckedHeaders?

    package init(
        deviceToken: String, payload: [UInt8], topic: String, pushType: APNsPushType? = nil,
        priority: APNsPriority? = nil, expiration: Date? = nil, collapseID: String? = nil, apnsID: String? = nil
    ) {
        self.deviceToken = deviceToken
        self.payload = payload
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }
}
