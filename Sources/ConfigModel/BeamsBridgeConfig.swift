/// An instance's Beams bridge (`instances[].beamsBridge`, docs/MIGRATING.md): while its devices move from Pusher
/// Beams to this server, every publish accepted here is also sent to the Beams instance for the devices still
/// there, and devices that moved can be retired at Beams.
package struct BeamsBridgeConfig: Sendable {
    /// The Beams instance id (a UUID); by default the local instance's own id (docs/MIGRATING.md, "From Pusher
    /// Beams", recommends keeping it, so the apps' SDK configuration does not change).
    package var instanceID: String
    /// The Beams instance's secret key, sent as `Authorization: Bearer …` to the publish API.
    package var secretKey: String
    /// Off: nothing more is queued, and forwards still queued are recorded as failed (`bridge switched off`)
    /// instead of sent.
    package var enabled = true
    /// Retire at Beams the Beams device a registration here names (`beamsDeviceId`).
    package var retireDevices = true
    /// Where the Beams APIs are: `https://{instanceID}.pushnotifications.pusher.com` unless overridden (tests).
    package var baseURL: String
    /// A CA bundle for `baseURL` (the test stand-in's throw-away CA).
    package var caFile: String?

    package init(
        instanceID: String, secretKey: String, enabled: Bool = true, retireDevices: Bool = true,
        baseURL: String, caFile: String? = nil
    ) {
        self.instanceID = instanceID
        self.secretKey = secretKey
        self.enabled = enabled
        self.retireDevices = retireDevices
        self.baseURL = baseURL
        self.caFile = caFile
    }

    /// `POST` target of a publish forward.
    package func publishURL(users: Bool) -> String {
        "\(baseURL)/publish_api/v1/instances/\(instanceID)/publishes/\(users ? "users" : "interests")"
    }

    /// `DELETE` target of a device retirement; `key` is `<platform>/<beamsDeviceId>` (the id percent-encoded).
    package func deviceURL(key: String) -> String {
        "\(baseURL)/device_api/v1/instances/\(instanceID)/devices/\(key)"
    }
}
