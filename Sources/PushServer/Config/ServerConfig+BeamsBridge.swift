import ConfigModel
import Foundation
import HTTPClient
import JSON

extension ServerConfig {
    static let beamsBridgeSecret = SecretKeys(
        inline: "secretKey", env: "secretKeyEnv", file: "secretKeyFile",
        minimumBytes: 1)

    /// `instances[].beamsBridge`: `instanceId` (default: the instance's id), the Beams secret (`secretKey`,
    /// `secretKeyEnv` or `secretKeyFile`), `enabled` (default true), `retireDevices` (default true), and for tests
    /// `baseURL` and `caFile`.
    static func readBeamsBridge(
        _ object: [String: JSONValue], _ p: String, localID: String?, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> BeamsBridgeConfig? {
        reader.checkKeys(
            object, p,
            allowed: [
                "instanceId", "secretKey", "secretKeyEnv", "secretKeyFile", "enabled",
                "retireDevices", "baseURL", "caFile",
            ])
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
        reader.bool(object, "enabled", p, into: &config.enabled)
        reader.bool(object, "retireDevices", p, into: &config.retireDevices)
        return config
    }
}
