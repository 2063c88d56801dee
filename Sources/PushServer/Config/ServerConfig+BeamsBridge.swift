import Foundation
import HTTPClient
import JSON

/// An instance's Beams bridge (`instances[].beamsBridge`, docs/MIGRATING.md): while its devices move from Pusher
/// Beams to this server, every publish accepted here is also sent to the Beams instance for the devices still
/// there, and devices that moved can be retired at Beams.
public struct BeamsBridgeConfig: Sendable {
    /// The Beams instance id (a UUID); by default the local instance's own id (docs/MIGRATING.md, "From Pusher
    /// Beams", recommends keeping it, so the apps' SDK configuration does not change).
    public var instanceID: String
    /// The Beams instance's secret key, sent as `Authorization: Bearer …` to the publish API.
    public var secretKey: String
    /// Off: nothing more is queued, and forwards still queued are recorded as failed (`bridge switched off`)
    /// instead of sent.
    public var enabled = true
    /// Retire at Beams the Beams device a registration here names (`beamsDeviceId`).
    public var retireDevices = true
    /// Where the Beams APIs are: `https://{instanceID}.pushnotifications.pusher.com` unless overridden (tests).
    public var baseURL: String
    /// A CA bundle for `baseURL` (the test stand-in's throw-away CA).
    public var caFile: String?

    /// `POST` target of a publish forward.
    func publishURL(users: Bool) -> String {
        "\(baseURL)/publish_api/v1/instances/\(instanceID)/publishes/\(users ? "users" : "interests")"
    }

    /// `DELETE` target of a device retirement; `key` is `<platform>/<beamsDeviceId>` (the id percent-encoded).
    func deviceURL(key: String) -> String {
        "\(baseURL)/device_api/v1/instances/\(instanceID)/devices/\(key)"
    }
}

extension ServerConfig {
    static let beamsBridgeSecret = SecretKeys(inline: "secretKey", env: "secretKeyEnv", file: "secretKeyFile",
                                              minimumBytes: 1)

    /// `instances[].beamsBridge`: `instanceId` (default: the instance's id), the Beams secret (`secretKey`,
    /// `secretKeyEnv` or `secretKeyFile`), `enabled` (default true), `retireDevices` (default true), and for tests
    /// `baseURL` and `caFile`.
    static func readBeamsBridge(_ object: [String: JSONValue], _ p: String, localID: String?, _ reader: inout ConfigReader,
                                environment: [String: String]) -> BeamsBridgeConfig? {
        reader.checkKeys(object, p, allowed: ["instanceId", "secretKey", "secretKeyEnv", "secretKeyFile", "enabled",
                                              "retireDevices", "baseURL", "caFile"])
        let id = reader.string(object, "instanceId", p) ?? localID
        if let id, UUID(uuidString: id) == nil {
            reader.error("\(p).instanceId", "must be a UUID (a Beams instance id)")
        }
        let secret = readSecret(object, p, beamsBridgeSecret, &reader, environment: environment)
        var baseURL = id.map { "https://\($0.lowercased()).pushnotifications.pusher.com" }
        if let text = reader.string(object, "baseURL", p) {
            do {
                _ = try HTTPURL(text)
                baseURL = text.hasSuffix("/") ? String(text.dropLast()) : text
            } catch {
                reader.error("\(p).baseURL", "\(error)")
            }
        }
        let caFile = readCAFile(object, p, &reader, environment: environment)
        guard let id, UUID(uuidString: id) != nil, let secret, let baseURL else { return nil }
        var config = BeamsBridgeConfig(instanceID: id, secretKey: secret, baseURL: baseURL, caFile: caFile)
        if let enabled = reader.bool(object, "enabled", p) { config.enabled = enabled }
        if let retire = reader.bool(object, "retireDevices", p) { config.retireDevices = retire }
        return config
    }
}
