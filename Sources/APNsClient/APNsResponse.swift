import Foundation
import JSON

/// What APNs answered to one request.
package struct APNsResponse: Sendable, Equatable {
    /// The HTTP status: 200 on success.
    package var status: Int
    /// `apns-id`: the one sent, or the one APNs generated.
    package var apnsID: String?
    /// `apns-unique-id` (sandbox only): looks the notification up in the Push Notifications Console.
    package var apnsUniqueID: String?
    /// The error body's `reason`; `nil` on success.
    package var reason: APNsReason?
    /// With 410 only: when APNs learnt the token was no longer valid (the body's `timestamp`, ms since epoch).
    /// Keep the token only if the device re-registered it after this moment.
    package var timestamp: Date?
    /// How many times the request was sent, including retries (1 when answered first time).
    package var attempts: Int

    package init(
        status: Int, apnsID: String? = nil, apnsUniqueID: String? = nil, reason: APNsReason? = nil,
        timestamp: Date? = nil, attempts: Int = 1
    ) {
        self.status = status
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
        self.reason = reason
        self.timestamp = timestamp
        self.attempts = attempts
    }

    /// Whether APNs accepted the notification.
    package var isSuccess: Bool { status == 200 }

    /// Parses an error body `{"reason":"…","timestamp":…}`; an empty or unreadable body gives `(nil, nil)`.
    package static func parseBody(_ body: [UInt8]) -> (reason: APNsReason?, timestamp: Date?) {
        guard !body.isEmpty, let object = JSONValue.parse(body)?.objectValue else { return (nil, nil) }
        let reason = object["reason"]?.stringValue.map(APNsReason.init(rawValue:))
        var millis: Double?
        if let number = object["timestamp"]?.doubleValue {
            millis = number
        } else if let text = object["timestamp"]?.stringValue {
            millis = Double(text)
        }
        // `Double("nan")` and `"inf"` parse; a timestamp that is not a finite number is no timestamp.
        let timestamp = millis.flatMap { $0.isFinite ? Date(timeIntervalSince1970: $0 / 1000) : nil }
        return (reason, timestamp)
    }
}
