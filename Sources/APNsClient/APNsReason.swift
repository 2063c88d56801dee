/// The `reason` in an APNs error body (docs/APNS.md §5), with unknown values kept verbatim.
package enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    case badCollapseId
    case badDeviceToken
    case badExpirationDate
    case badMessageId
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIdInToken
    case badEnvironmentKeyIdInToken
    case badPath
    case methodNotAllowed
    case expiredToken
    case unregistered
    case payloadTooLarge
    case tooManyProviderTokenUpdates
    case tooManyRequests
    case internalServerError
    case serviceUnavailable
    case shutdown
    // Broadcast channels (iOS 18): the channel management API and broadcast sends (docs/APNS.md "Broadcast
    // channels"). `BadExpirationDate` there also means a nonzero expiration on a no-storage channel.
    case featureNotEnabled
    case missingChannelId
    case badChannelId
    case channelNotRegistered
    case cannotCreateChannelConfig
    case badRequestParams
    case badRequestPayload
    case missingPushType
    case topicMismatch
    /// A reason this client does not know (Apple adds reasons over time).
    case unknown(String)

    /// Every known reason, in Apple's order (docs/APNS.md §5).
    package static let known: [APNsReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment,
        .expiredProviderToken, .forbidden, .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken,
        .badEnvironmentKeyIdInToken, .badPath, .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge,
        .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown,
        .featureNotEnabled, .missingChannelId, .badChannelId, .channelNotRegistered, .cannotCreateChannelConfig,
        .badRequestParams, .badRequestPayload, .missingPushType, .topicMismatch,
    ]

    private static let byRawValue: [String: APNsReason] = Dictionary(
        uniqueKeysWithValues: known.map { ($0.rawValue, $0) })

    /// Parses Apple's spelling (`"BadDeviceToken"`); anything else becomes `.unknown`.
    package init(rawValue: String) {
        self = Self.byRawValue[rawValue] ?? .unknown(rawValue)
    }

    /// Apple's spelling, exactly as it appears in the JSON body.
    package var rawValue: String {
        switch self {
        case .badCollapseId: return "BadCollapseId"
        case .badDeviceToken: return "BadDeviceToken"
        case .badExpirationDate: return "BadExpirationDate"
        case .badMessageId: return "BadMessageId"
        case .badPriority: return "BadPriority"
        case .badTopic: return "BadTopic"
        case .deviceTokenNotForTopic: return "DeviceTokenNotForTopic"
        case .duplicateHeaders: return "DuplicateHeaders"
        case .idleTimeout: return "IdleTimeout"
        case .invalidPushType: return "InvalidPushType"
        case .missingDeviceToken: return "MissingDeviceToken"
        case .missingTopic: return "MissingTopic"
        case .payloadEmpty: return "PayloadEmpty"
        case .topicDisallowed: return "TopicDisallowed"
        case .badCertificate: return "BadCertificate"
        case .badCertificateEnvironment: return "BadCertificateEnvironment"
        case .expiredProviderToken: return "ExpiredProviderToken"
        case .forbidden: return "Forbidden"
        case .invalidProviderToken: return "InvalidProviderToken"
        case .missingProviderToken: return "MissingProviderToken"
        case .unrelatedKeyIdInToken: return "UnrelatedKeyIdInToken"
        case .badEnvironmentKeyIdInToken: return "BadEnvironmentKeyIdInToken"
        case .badPath: return "BadPath"
        case .methodNotAllowed: return "MethodNotAllowed"
        case .expiredToken: return "ExpiredToken"
        case .unregistered: return "Unregistered"
        case .payloadTooLarge: return "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: return "TooManyProviderTokenUpdates"
        case .tooManyRequests: return "TooManyRequests"
        case .internalServerError: return "InternalServerError"
        case .serviceUnavailable: return "ServiceUnavailable"
        case .shutdown: return "Shutdown"
        case .featureNotEnabled: return "FeatureNotEnabled"
        case .missingChannelId: return "MissingChannelId"
        case .badChannelId: return "BadChannelId"
        case .channelNotRegistered: return "ChannelNotRegistered"
        case .cannotCreateChannelConfig: return "CannotCreateChannelConfig"
        case .badRequestParams: return "BadRequestParams"
        case .badRequestPayload: return "BadRequestPayload"
        case .missingPushType: return "MissingPushType"
        case .topicMismatch: return "TopicMismatch"
        case .unknown(let raw): return raw
        }
    }

    /// Reasons that mean the credentials or the connection's team binding are wrong, not the notification:
    /// every later request with the same credentials fails the same way.
    package var isCredentialFault: Bool {
        switch self {
        case .badCertificate, .badCertificateEnvironment, .invalidProviderToken, .missingProviderToken,
            .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .tooManyProviderTokenUpdates,
            .expiredProviderToken:
            return true
        default:
            return false
        }
    }

    package var description: String { rawValue }
}
