import Foundation

/// The push service a device token belongs to.
public enum Platform: String, Sendable, CaseIterable {
    case apns
    case fcm
    case web
    /// UnifiedPush (docs/API.md "UnifiedPush"): an RFC 8030 endpoint on a push server the phone's user picked, sent
    /// RFC 8291 Web Push with VAPID like `web`; the token is the same canonical subscription JSON.
    case unifiedpush
    /// Huawei Push Kit (docs/API.md "Huawei Push Kit"): an HMS Core push token, sent through Huawei's v1
    /// `messages:send` API in batches of up to 1,000 tokens.
    case hms
}

/// The APNs environment a token was issued for: a sandbox build's token is useless in production.
public enum PushEnvironment: String, Sendable, CaseIterable {
    case sandbox
    case production
}

/// The last answer the push service gave for a device.
package struct DeliveryResult: Sendable, Equatable {
    /// HTTP status from the push service (200, 400, 410, ...).
    package var status: Int
    /// The service's reason string (`BadDeviceToken`, `Unregistered`, ...), if any.
    package var reason: String?
    /// When the result was received.
    package var at: Date

    package init(status: Int, reason: String?, at: Date) {
        self.status = status
        self.reason = reason
        self.at = at
    }
}

/// A registered device, as stored.
package struct Device: Sendable, Equatable {
    /// Public id handed to the SDK (`apns-<uuid>`).
    package var id: String
    package var instanceID: String
    package var platform: Platform
    /// The token; APNs tokens are lower-case hex.
    package var token: String
    package var environment: PushEnvironment
    /// `true` when the app declared `environment`; `false` when the server defaulted it.
    package var environmentDeclared: Bool
    package var bundleID: String?
    /// The SDK's metadata object as JSON text (the store does not parse it).
    package var metadata: String
    package var userID: String?
    package var createdAt: Date
    package var lastRegisteredAt: Date
    package var lastResult: DeliveryResult?
    /// Set when the push service said the token is dead; cleared by re-registration.
    package var invalidatedAt: Date?
    /// The device's IANA time zone name for local-time publishes (`updateTimeZone`); nil: the instance default.
    package var timeZone: String?

    /// Backends build these; so do tests.
    package init(
        id: String, instanceID: String, platform: Platform, token: String, environment: PushEnvironment,
        environmentDeclared: Bool, bundleID: String?, metadata: String, userID: String?, createdAt: Date,
        lastRegisteredAt: Date, lastResult: DeliveryResult?, invalidatedAt: Date?, timeZone: String? = nil
    ) {
        self.id = id
        self.instanceID = instanceID
        self.platform = platform
        self.token = token
        self.environment = environment
        self.environmentDeclared = environmentDeclared
        self.bundleID = bundleID
        self.metadata = metadata
        self.userID = userID
        self.createdAt = createdAt
        self.lastRegisteredAt = lastRegisteredAt
        self.lastResult = lastResult
        self.invalidatedAt = invalidatedAt
        self.timeZone = timeZone
    }
}

/// One registration request (`POST /devices/apns`).
package struct DeviceRegistration: Sendable, Equatable {
    package var instanceID: String
    package var platform: Platform
    package var token: String
    package var environment: PushEnvironment
    /// Whether the app declared `environment`. A defaulted environment never overwrites a stored one (which may
    /// have been corrected from delivery results).
    package var environmentDeclared: Bool
    package var bundleID: String?
    /// JSON text.
    package var metadata: String

    package init(
        instanceID: String, platform: Platform = .apns, token: String, environment: PushEnvironment = .production,
        environmentDeclared: Bool = false, bundleID: String? = nil, metadata: String = "{}"
    ) {
        self.instanceID = instanceID
        self.platform = platform
        self.token = token
        self.environment = environment
        self.environmentDeclared = environmentDeclared
        self.bundleID = bundleID
        self.metadata = metadata
    }
}

/// The answer to a registration: the device (new or existing) and the interests it already follows.
package struct RegisteredDevice: Sendable, Equatable {
    package var device: Device
    /// `true` when this registration created the device.
    package var created: Bool
    /// Sorted interest names.
    package var interests: [String]

    /// Backends build these; so do tests.
    package init(device: Device, created: Bool, interests: [String]) {
        self.device = device
        self.created = created
        self.interests = interests
    }
}

/// A page of a device's interests.
package struct InterestPage: Sendable, Equatable {
    /// Sorted by name.
    package var interests: [String]
    /// Pass back to get the next page; `nil` on the last page. Opaque to callers.
    package var nextCursor: String?

    /// Backends build these; so do tests.
    package init(interests: [String], nextCursor: String?) {
        self.interests = interests
        self.nextCursor = nextCursor
    }
}

/// The outcome of binding a user to a device.
package enum SetUserResult: Sendable, Equatable {
    /// Bound (or it was already bound to the same user).
    case ok
    case deviceNotFound
    /// The device belongs to another user ("A User Id is already associated with this device.").
    case differentUserAlreadySet
    /// The user reached the device limit.
    case userHasTooManyDevices
}

/// What a delivery result means for the device's health.
package enum DeviceEffect: Sendable, Equatable {
    /// Record the result only.
    case none
    /// APNs 410 `Unregistered`: the token stopped being valid at `since` (APNs' timestamp). Invalidates the device
    /// only if it has not registered again after `since`.
    case unregistered(since: Date)
    /// `BadDeviceToken` / `DeviceTokenNotForTopic`: the token is unusable. Invalidates the device unless it
    /// registered again after the result (`DeviceResult.at`).
    case badToken
    /// The token turned out to belong to this environment.
    case environment(PushEnvironment)
}

/// One device's delivery result, to record.
package struct DeviceResult: Sendable, Equatable {
    /// `Target.ref` of the device.
    package var device: Int64
    package var status: Int
    package var reason: String?
    package var at: Date
    package var effect: DeviceEffect

    package init(device: Int64, status: Int, reason: String? = nil, at: Date, effect: DeviceEffect = .none) {
        self.device = device
        self.status = status
        self.reason = reason
        self.at = at
        self.effect = effect
    }
}
