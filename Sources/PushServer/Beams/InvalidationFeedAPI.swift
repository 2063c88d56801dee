import Foundation
import HTTPServer
import JSON
import PushStore

/// `GET /customer_api/v1/instances/{id}/devices/invalidations?since=<cursor>&limit=<n>`: the devices the push
/// services declared dead, oldest first, for backends that poll instead of taking the `device.invalidated` webhook
/// (docs/API.md "Device invalidations"). Authenticated with the instance's secret like the rest of the Customer API.
struct InvalidationFeedAPI: Sendable {
    let app: AppContext

    func register(into router: inout Router) {
        router.get("/customer_api/v1/instances/:instance/devices/invalidations", bodyLimit: .noBody) { try await feed($0) }
    }

    func feed(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .devicesRead)
        try app.checkRateLimit(instance)
        // `since`: the `next_cursor` of an earlier page; none: from the oldest event still retained.
        let page = try PageQuery(request)
        let events = try await app.store.invalidations(instanceID: instance.id, after: page.since, limit: page.limit)
        return .json(.object([
            "events": .array(events.map(Self.render)),
            "next_cursor": .string(String(events.last?.id ?? page.since)),
        ]))
    }

    /// An event as the feed lists it and the `device.invalidated` webhook carries it.
    static func render(_ event: DeviceInvalidation) -> JSONValue {
        var object: [String: JSONValue] = [
            "event_id": .string(eventID(event)),
            "event_type": .string(eventType(event)),
            "instance_id": .string(event.instanceID),
            "device_id": .string(event.deviceID),
            "platform": .string(event.platform),
            "token_masked": .string(event.maskedToken),
            "user_id": event.userID.map(JSONValue.string) ?? .null,
            "reason": .string(event.reason),
            "provider_status": .int(event.status),
            "provider_timestamp": event.providerTimestamp.map { .string($0.iso8601) } ?? .null,
            "at": .string(event.at.iso8601),
        ]
        object["cursor"] = .string(String(event.id))
        return .object(object)
    }

    /// `device.removed` for a device deleted through the API, `device.invalidated` for a provider's verdict.
    static func eventType(_ event: DeviceInvalidation) -> String {
        event.isRemoval ? "device.removed" : "device.invalidated"
    }

    /// The event's stable id: the same for every retry of its webhook and for its feed entry, so a receiver that
    /// takes both can de-duplicate.
    static func eventID(_ event: DeviceInvalidation) -> String { "inv_\(event.id)" }
}
