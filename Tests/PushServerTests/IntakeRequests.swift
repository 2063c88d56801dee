import ConfigModel
import Foundation
import PushServer
import TestSupport

/// The writes the store-outage tests make over real sockets, for one instance: a device registration (device API)
/// and a publish to the interest "news" (publish API, with the secret), plus the server config that serves them.
struct IntakeRequests {
    let instanceID = "6f0f1a8e-2f5b-4c9e-8a51-0c7f3e2d9b14"
    let secret: String

    var registerPath: String { "/device_api/v1/instances/\(instanceID)/devices/apns" }
    /// A registration of the token `abab…ab`; replace `abab` to register another device.
    let registration = #"{"token":"\#(String(repeating: "ab", count: 32))","bundleIdentifier":"com.example.app"}"#
    let json = [("Content-Type", "application/json")]
    var publishPath: String { "/publish_api/v1/instances/\(instanceID)/publishes/interests" }
    var publishHeaders: [(String, String)] { json + [("Authorization", "Bearer \(secret)")] }
    let publishBody = #"{"interests":["news"],"apns":{"aps":{"alert":"hi"}}}"#

    /// A server on an ephemeral port with one event loop and this instance (no APNs credentials); the caller sets the
    /// store.
    func serverConfig() -> ServerConfig {
        var config = ServerConfig()
        config.listen.port = 0
        config.listen.eventLoops = 1
        config.instances = [InstanceConfig(id: instanceID, secretKey: secret, apns: nil, webhook: nil)]
        return config
    }

    /// POSTs `registration`, or `body` (another device), to the server on `port`.
    func register(on port: Int, body: String? = nil) async throws -> RawHTTPResponse {
        try await rawRequest(port, "POST", registerPath, headers: json, body: body ?? registration)
    }

    /// GETs the instance's recent publishes from the server on `port`.
    func recentPublishes(on port: Int) async throws -> RawHTTPResponse {
        try await rawRequest(
            port, "GET", "/publish_api/v1/instances/\(instanceID)/publishes",
            headers: [("Authorization", "Bearer \(secret)")])
    }

    /// POSTs the publish to the server on `port`.
    func publish(on port: Int) async throws -> RawHTTPResponse {
        try await rawRequest(port, "POST", publishPath, headers: publishHeaders, body: publishBody)
    }
}
