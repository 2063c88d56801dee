import Foundation

/// One Live Activity token of a device (docs/API.md "Live Activities"): the push-to-start token of an
/// attributes type, or the update token of one running activity. Rows belong to their device: deleting the device
/// deletes them.
public struct LiveActivityToken: Sendable, Equatable {
    /// Which ActivityKit token this is.
    package enum Kind: String, Sendable, CaseIterable {
        /// `Activity<T>.pushToStartTokenUpdates`: starts a new activity of one attributes type (`event: start`).
        case start
        /// `activity.pushTokenUpdates`: updates or ends one running activity (`event: update|end`).
        case update
    }

    /// The owning device's public id.
    package var deviceID: String
    package var kind: Kind
    /// Lower-case hex, as APNs takes it in the request path.
    package var token: String
    /// The Swift `ActivityAttributes` type name, equal to the payload's `attributes-type`.
    package var attributesType: String
    /// The app's `Activity.id`; nil for start tokens.
    package var activityID: String?
    /// A server correlation string the app reports back (an order or match id); nil when not given.
    package var reference: String?
    /// When the row stops being a target and retention may purge it; nil for start tokens (they have no
    /// documented lifetime and are replaced when they rotate).
    package var expiresAt: Date?
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        deviceID: String, kind: Kind, token: String, attributesType: String, activityID: String? = nil,
        reference: String? = nil, expiresAt: Date? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.deviceID = deviceID
        self.kind = kind
        self.token = token
        self.attributesType = attributesType
        self.activityID = activityID
        self.reference = reference
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Longest attributes type name and activity id, in bytes.
    package static let maxNameBytes = 128
    /// Longest `reference`, in bytes.
    public static let maxReferenceBytes = 256
    /// Activities live at most 8 h active plus 4 h on the Lock Screen, so an update token is worth nothing after
    /// 12 h (the default and the cap of `expiresAt`).
    package static let maxUpdateTokenLifetime: TimeInterval = 12 * 3600

    /// A Swift type name as ActivityKit reports it: 1-128 ASCII letters, digits, `_` and `.` (module-qualified
    /// names), not starting with a digit or `.`.
    public static func isValidAttributesType(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= maxNameBytes else { return false }
        guard !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first), first != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."):
                true
            default: false
            }
        }
    }

    /// An activity id or reference: 1-`maxBytes` printable ASCII bytes (`Activity.id` is a UUID string today, but
    /// only printable text is assumed, so that a row never holds control bytes that end up in logs).
    public static func isValidPrintable(_ text: String, maxBytes: Int) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maxBytes else { return false }
        return bytes.allSatisfy { (0x21...0x7E).contains($0) }
    }
}
