import APNsClient
import ConfigModel

/// Sends channel management calls and broadcast pushes: `APNsBroadcastClient`, or a stand-in in engine tests.
package protocol BroadcastSending: Sendable {
    func manage(
        _ request: APNsChannelRequest, bundleID: APNsBundleID, endpoints: APNsBroadcastEndpoints,
        credentials: APNsCredentials, requestID: String?
    ) async -> APNsBroadcastResult

    func broadcast(
        _ request: APNsBroadcastRequest, bundleID: APNsBundleID, endpoints: APNsBroadcastEndpoints,
        credentials: APNsCredentials
    ) async -> APNsBroadcastResult

    /// Aborts calls in flight (they end `.shutdown`).
    func shutdown() async
}

extension APNsBroadcastClient: BroadcastSending {}

extension InstanceRuntime {
    /// Where the instance's channel calls and broadcasts go: the configured URLs, else the instance's
    /// `endpointOverride` (the mock serves both APIs), else Apple's hosts for the broadcast environment. nil
    /// without an `apns` section.
    package var broadcastEndpoints: APNsBroadcastEndpoints? {
        guard let apns = config.apns else { return nil }
        let broadcast = apns.broadcast ?? APNsBroadcastConfig()
        let environment = broadcast.environment ?? apns.defaultEnvironment
        let apple: APNsBroadcastEndpoints = environment == .sandbox ? .sandbox : .production
        return APNsBroadcastEndpoints(
            managementURL: broadcast.managementURL ?? apns.endpointOverride ?? apple.managementURL,
            sendURL: broadcast.sendURL ?? apns.endpointOverride ?? apple.sendURL,
            caFile: apns.caFile)
    }

    /// The app's bundle id (`apns.topic`) as a broadcast path segment; nil when absent or not a bundle id.
    package var broadcastBundleID: APNsBundleID? { config.apns.flatMap { APNsBundleID($0.topic) } }

    /// Most channels one broadcast publish may name.
    var maxChannelsPerPublish: Int {
        config.apns?.broadcast?.maxChannelsPerPublish ?? APNsBroadcastConfig.defaultMaxChannelsPerPublish
    }
}
