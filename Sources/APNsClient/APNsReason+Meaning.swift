extension APNsReason {
    /// What the reason means for the sender, in one line (Apple's table, with the developer's usual cause), for
    /// people reading an answer: the console and `push-server send`.
    package var meaning: String {
        switch self {
        case .badCollapseId: return "apns-collapse-id is longer than 64 bytes."
        case .badDeviceToken:
            return
                "The token is malformed or belongs to the other environment (sandbox for Xcode builds, production for TestFlight/App Store)."
        case .badExpirationDate: return "apns-expiration is not a valid UNIX time."
        case .badMessageId: return "apns-id is not a canonical UUID."
        case .badPriority: return "apns-priority is not 10, 5 or 1, or is 10 on a background push."
        case .badTopic: return "apns-topic is not a bundle id this key may send to."
        case .deviceTokenNotForTopic: return "The token belongs to another app (bundle id) than apns-topic."
        case .duplicateHeaders: return "A header was sent twice."
        case .idleTimeout: return "The connection was idle too long; APNs closed it."
        case .invalidPushType: return "apns-push-type is unknown or does not match the payload."
        case .missingDeviceToken: return "No device token in the request path."
        case .missingTopic: return "apns-topic is required for this key and was not sent."
        case .payloadEmpty: return "The payload is empty."
        case .topicDisallowed: return "Pushing to this topic is not allowed."
        case .badCertificate: return "The certificate is invalid."
        case .badCertificateEnvironment: return "The certificate is for the other environment."
        case .expiredProviderToken: return "The provider token (JWT) is older than an hour."
        case .forbidden: return "The action is not allowed for this key."
        case .invalidProviderToken:
            return "The provider token does not verify: wrong Team ID, Key ID or key, or a revoked key."
        case .missingProviderToken: return "No provider token (authorization header) was sent."
        case .unrelatedKeyIdInToken: return "The key id differs from the one this connection started with."
        case .badEnvironmentKeyIdInToken: return "The key is restricted to the other environment."
        case .badPath: return "The request path is not /3/device/<token>."
        case .methodNotAllowed: return "Only POST is allowed."
        case .expiredToken: return "The device token has expired."
        case .unregistered:
            return
                "The app was removed or the token is no longer valid for this topic; stop sending unless the app registers again."
        case .payloadTooLarge: return "The payload is over 4096 bytes (5120 for VoIP)."
        case .tooManyProviderTokenUpdates: return "The provider token was replaced more often than every 20 minutes."
        case .tooManyRequests: return "Too many notifications to this device token in a short time."
        case .internalServerError: return "An internal error at APNs."
        case .serviceUnavailable: return "APNs is unavailable; retry later."
        case .shutdown: return "APNs is shutting this server down; retry on a new connection."
        case .featureNotEnabled:
            return "Broadcast push is not enabled for this app: turn on the Broadcast Capability of its App ID."
        case .missingChannelId: return "The request has no apns-channel-id header."
        case .badChannelId: return "apns-channel-id is not a channel id APNs issued (base64)."
        case .channelNotRegistered:
            return
                "No such channel for this app in this environment (deleted, never created, or created in the other environment)."
        case .cannotCreateChannelConfig:
            return
                "APNs could not create the channel; the app may have reached its 10,000 channels in this environment."
        case .badRequestParams: return "A channel request parameter is invalid (message-storage-policy, push-type)."
        case .badRequestPayload: return "The request body is not what APNs expects for this call."
        case .missingPushType: return "apns-push-type is required (liveactivity for broadcasts)."
        case .topicMismatch: return "The bundle id in the path does not belong to this key's team."
        case .unknown: return "A reason this server does not know; see Apple's documentation."
        }
    }
}
