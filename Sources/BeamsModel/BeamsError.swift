/// An error answered to a Beams client as `{"error": title, "description": description}`.
///
/// Titles and descriptions follow the real service's wording where it is known (docs/BEAMS-PROTOCOL.md §1.4, §2.4,
/// §4.4), because SDKs react to them: the iOS SDK treats a 401/403 whose description contains "device token" as a
/// bad token, and stops retrying on exactly "Device could not be created".
public struct BeamsError: Error, Sendable, Equatable {
    /// The HTTP status code (exposed to the HTTP layer as `status`).
    package var statusCode: Int
    package var title: String
    package var detail: String
    /// Seconds for a `Retry-After` header (429 answers).
    package var retryAfter: Int?

    package init(_ status: Int, _ title: String, _ detail: String, retryAfter: Int? = nil) {
        self.statusCode = status
        self.title = title
        self.detail = detail
        self.retryAfter = retryAfter
    }

    // MARK: Shared by every API family

    package static let missingAuthorization = BeamsError(400, "Incomplete Request", "Authorization header is missing")
    package static let incorrectSecret = BeamsError(401, "Unauthorized", "Incorrect Secret Key")
    // `missingScope` and `rejectedKey` (API keys) are in PushServer's BeamsError+Keys.swift, beside the keys.
    package static let instanceNotFound = BeamsError(404, "Instance not found", "Could not find the instance")
    package static let invalidJSON = BeamsError(400, "Bad request", "Failed to read body as a JSON object")
    /// 429 with `Retry-After`, Beams' wording. The iOS and Android SDKs retry it with exponential back-off.
    package static func rateLimited(retryAfter: Int) -> BeamsError {
        BeamsError(429, "Rate Limited", "Too many requests being made in quick succession", retryAfter: retryAfter)
    }

    /// 429 for an address locked out after repeated wrong secret keys; the key is not even compared meanwhile.
    package static func tooManyAuthFailures(retryAfter: Int) -> BeamsError {
        BeamsError(
            429, "Rate Limited", "Too many requests with an incorrect secret key from this address",
            retryAfter: retryAfter)
    }
    package static let invalidContentType = BeamsError(
        400, "Invalid content type", "Only application/json is supported")
    /// 403 for a browser request from an origin that the instance's `web.allowedOrigins` does not list.
    package static let originNotAllowed = BeamsError(
        403, "Forbidden", "This origin is not allowed to call this instance (web.allowedOrigins)")
    /// 503 while the store cannot write or be read (a full disk, a database that is down, …): nothing of the
    /// request was stored; sent with `Retry-After` (`storage.outageRetryAfterSeconds`). SDKs retry 5xx answers.
    package static func storeUnavailable(retryAfter: Int) -> BeamsError {
        BeamsError(
            503, "Service Unavailable", "The server cannot store data right now; nothing was stored. Retry later",
            retryAfter: retryAfter)
    }

    /// 422 with a backticked JSON path, like production: "`interests`: interests is required".
    package static func schema(_ path: String, _ message: String) -> BeamsError {
        BeamsError(422, "Unprocessable Entity", "`\(path)`: \(message)")
    }

    package static func bodyTooLarge(maxKiB: Int) -> BeamsError {
        BeamsError(400, "Bad request", "Request body size is too large (max \(maxKiB)KiB)")
    }

    // MARK: Device API

    package static let deviceNotFound = BeamsError(404, "Device not found", "Could not find the device")
    package static let missingToken = BeamsError(400, "Bad request", "Missing APNs token")
    package static let invalidToken = BeamsError(
        401, "Unauthorized", "Incorrect APNs token supplied: the device token must be hexadecimal")
    /// An FCM token that is not a registration token. The title is the one the Android SDK acts on: it fetches a
    /// new token and registers again (any other 4xx on register is retried forever with the same body).
    package static func invalidFCMToken(_ reason: String) -> BeamsError {
        BeamsError(400, "InvalidToken", "The token is not an FCM registration token: it \(reason)")
    }
    /// A web token that is not a valid browser push subscription.
    package static func invalidWebToken(_ reason: String) -> BeamsError {
        BeamsError(400, "Bad request", "The token is not a valid web push subscription: \(reason)")
    }
    /// `GET …/web-vapid-public-key` for an instance without a `web` section.
    package static let webNotConfigured = BeamsError(
        404, "Web push not configured", "This instance has no VAPID key: set instances[].web in the server config")
    /// A UnifiedPush registration or endpoint update whose subscription or endpoint is refused.
    package static func invalidUnifiedPushEndpoint(_ reason: String) -> BeamsError {
        BeamsError(400, "Bad request", "Not a usable UnifiedPush subscription: \(reason)")
    }
    /// A UnifiedPush device route on an instance without a `unifiedpush` section.
    package static let unifiedPushNotConfigured = BeamsError(
        404, "UnifiedPush not configured",
        "This instance does not send UnifiedPush: set instances[].unifiedpush in the server config")
    package static let missingBundleID = BeamsError(400, "Bad request", "Missing App Bundle Identifier")
    /// `PUT …/token` with a token that a live device bound to another user holds (docs/SECURITY.md, "Push tokens").
    /// 400, on which the Android SDK drops the refresh instead of retrying it.
    package static let tokenHeldByAnotherUser = BeamsError(
        400, "Bad request", "This token belongs to another device that is bound to another user")
    package static let tooManyInterests = BeamsError(
        400, "Bad request",
        "Too many interests are being set for this device. Only 5000 interests per device are allowed.")
    package static let userAlreadySet = BeamsError(
        400, "Bad request", "A User Id is already associated with this device.")
    /// The device over `limits.maxDevicesPerUser` (Beams: 100), with Beams' text. Beams documents 422, but the iOS
    /// SDK retries every status except 400/401/403/404 forever (docs/API.md), so it is 400: iOS and Android
    /// both stop on it and report the error to the app.
    package static func userDeviceLimit(_ limit: Int) -> BeamsError {
        BeamsError(400, "Bad request", "User already has reached the maximum of \(limit) devices.")
    }

    /// A new device beyond `limits.maxDevicesPerInstance`. 400, so that the iOS SDK stops retrying until the next
    /// app launch instead of looping.
    package static let instanceDeviceLimit = BeamsError(
        400, "Bad request", "Device could not be created: the instance has reached its device limit")
    /// A new device beyond the instance's `quotas.devices`. 400 with "Device could not be created" like the
    /// device cap, not Beams' 402: Beams never refused a registration (its 402 blocked publishes over the plan),
    /// and the iOS SDK retries every status but 400/401/403/404 forever, so a 402 would loop on every phone.
    package static func instanceDeviceQuota(_ quota: Int) -> BeamsError {
        BeamsError(
            400, "Bad request",
            "Device could not be created: the instance has reached its quota of \(quota) devices")
    }
    /// A publish beyond the instance's `quotas.publishesPerDay`: 429 with `Retry-After` until 00:00 UTC. Not
    /// Beams' 402 ("Publishing has been blocked due to being over plan limits"): that answer has no end, while
    /// this quota resets at a known moment, which 429 and `Retry-After` say; the Java SDK maps 429 to its
    /// too-many-requests error, and the title stays Beams' "Rate Limited".
    package static func publishQuota(_ quota: Int, retryAfter: Int, resetsAt: String) -> BeamsError {
        BeamsError(
            429, "Rate Limited",
            "The instance has reached its quota of \(quota) publishes per day (UTC); it resets at \(resetsAt)",
            retryAfter: retryAfter)
    }
    /// An interest write beyond `limits.maxSubscriptionsPerInstance` or `limits.maxInterestsPerInstance`; nothing
    /// of it was stored. 400 like the device cap: the iOS SDK stops retrying it until the next app launch, the
    /// Android and Web SDKs report it.
    package static let instanceSubscriptionLimit = BeamsError(
        400, "Bad request", "Interests could not be set: the instance has reached its subscription limit")
    package static let instanceInterestLimit = BeamsError(
        400, "Bad request", "Interests could not be set: the instance has reached its limit of distinct interest names")
    /// A body on a route that takes none.
    package static let unexpectedBody = BeamsError(400, "Bad request", "This request takes no body")

    package static func invalidInterest(_ name: String) -> BeamsError {
        BeamsError(
            400, "Invalid interest name",
            "Interest names must be 1-164 characters of a-z, A-Z, 0-9, _ - = @ , . ; (got \"\(name.prefix(200))\")")
    }
}
