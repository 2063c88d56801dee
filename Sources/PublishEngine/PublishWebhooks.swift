import ConfigModel
import JSON
import PushStore

/// The webhooks a publish produces, as the engine sees them: queued (not delivered) while the publish runs.
/// `WebhookOutbox` is the real one; the engine's unit tests record them.
package protocol PublishWebhooks: Sendable {
    /// The per-publish `webhookUrl` got `STARTED` (first attempt only).
    func publishStarted(url: String, instanceID: String, publishID: String, requestBody: JSONValue) async
    /// The per-publish `webhookUrl` gets `FINISHED` with the publish's counts.
    func publishFinished(url: String, status: PublishStatus, requestBody: JSONValue) async
    /// The instance webhook's `v1.PublishToUsersAttempt`: which users APNs accepted a device of, which failed.
    func publishToUsersAttempt(
        instance: InstanceConfig, publishID: String, requested: [String],
        delivered: Set<String>, failed: Set<String>, seen: Set<String>) async
}

extension WebhookOutbox: PublishWebhooks {}

/// The store roles the engine uses: the publish queue, and the device registry to rebuild a resumed users
/// publish's outcome from the devices' last results, and the Live Activity registry (its rows are the targets of a
/// Live Activity publish, and dead ones are deleted).
package typealias PublishEngineStore = PublishQueue & DeviceRegistry & LiveActivityRegistry
