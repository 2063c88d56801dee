import Foundation

/// A device the push service declared dead (APNs 410 or `BadDeviceToken`, FCM `UNREGISTERED`, Web Push 404/410),
/// recorded in the transaction that invalidated it: the pull feed (`GET …/devices/invalidations`) and the
/// `device.invalidated` instance webhook read these rows. The token is kept masked only (docs/SECURITY.md).
package struct DeviceInvalidation: Sendable, Equatable {
    /// Ascending per store, never reused (the feed's cursor).
    package var id: Int64
    package var instanceID: String
    /// The device's public id (`apns-<uuid>`, …).
    package var deviceID: String
    /// The platform's raw name (`apns`, `fcm`, `web`, …).
    package var platform: String
    /// `DeviceInvalidation.mask(token:)`: never the whole token.
    package var maskedToken: String
    package var userID: String?
    /// The provider's reason (`Unregistered`, `BadDeviceToken`, `UNREGISTERED`, `HTTP410`, …).
    package var reason: String
    /// The provider's HTTP status.
    package var status: Int
    /// When the provider says the token stopped being valid (APNs 410's `timestamp`), if it said.
    package var providerTimestamp: Date?
    /// When the server recorded the invalidation.
    package var at: Date

    /// Backends build these; so do tests.
    package init(
        id: Int64, instanceID: String, deviceID: String, platform: String, maskedToken: String,
        userID: String?, reason: String, status: Int, providerTimestamp: Date?, at: Date
    ) {
        self.id = id
        self.instanceID = instanceID
        self.deviceID = deviceID
        self.platform = platform
        self.maskedToken = maskedToken
        self.userID = userID
        self.reason = reason
        self.status = status
        self.providerTimestamp = providerTimestamp
        self.at = at
    }

    /// The characters of a token a mask keeps at its end: enough for a customer to match a token they hold,
    /// too few to send to it.
    package static let keptSuffix = 6

    /// The token's last `keptSuffix` characters after `…`; for a Web Push / UnifiedPush subscription (JSON text),
    /// the endpoint's host and the endpoint's last characters (the keys are never kept).
    package static func mask(token: String) -> String {
        var tail = token
        var prefix = ""
        if token.hasPrefix("{"), let range = token.range(of: "\"endpoint\":\"") {
            let rest = token[range.upperBound...]
            let endpoint = String(rest.prefix { $0 != "\"" })
            tail = endpoint
            if let scheme = endpoint.range(of: "://") {
                prefix = String(endpoint[scheme.upperBound...].prefix { $0 != "/" && $0 != ":" }) + "/"
            }
        }
        guard tail.count > keptSuffix * 2 else { return prefix + "…" }
        return prefix + "…" + String(tail.suffix(keptSuffix))
    }
}

extension DeviceInvalidation {
    /// `reason` of a device the app deleted (`DELETE /device_api/…/devices/…`).
    package static let deviceDeleted = "DeviceDeleted"
    /// `reason` of a device deleted with its user (`DELETE /customer_api/…/users/…`).
    package static let userDeleted = "UserDeleted"

    /// Whether the record is a removal through the API (status 0, no provider involved) rather than a provider's
    /// invalidation.
    package var isRemoval: Bool { status == 0 }

    /// The record of `device`, deleted through the API for `reason`, at `at`.
    package static func removal(
        of device: (
            instanceID: String, id: String, platform: String, token: String,
            userID: String?
        ), reason: String, at: Date
    ) -> DeviceInvalidation {
        DeviceInvalidation(
            id: 0, instanceID: device.instanceID, deviceID: device.id, platform: device.platform,
            maskedToken: mask(token: device.token), userID: device.userID, reason: reason, status: 0,
            providerTimestamp: nil, at: at)
    }
}

/// Why a device's health effect was an invalidation, as recorded: the reason and status of the result, and the
/// provider's timestamp when there is one.
extension DeviceResult {
    /// The provider's own time for an invalidation (APNs 410's timestamp), nil for other effects.
    package var providerTimestamp: Date? {
        if case .unregistered(let since) = effect { return since }
        return nil
    }

    /// The reason an invalidation record carries: the provider's reason, else `HTTP<status>`.
    package var invalidationReason: String { reason ?? "HTTP\(status)" }
}
