import BeamsModel
import Foundation
import HTTPServer
import JSON
import PushStore

/// `GET /customer_api/v1/instances/{id}/devices/invalidations?since=<cursor>&limit=<n>`: the devices the push
/// services declared dead, oldest first, for backends that poll instead of taking the `device.invalidated` webhook
/// (docs/API.md "Device invalidations"). Authenticated with the instance's secret like the rest of the Customer API.
struct InvalidationFeedAPI: Sendable {
    let app: AppContext

    /// Events per page by default, and at most.
    static let defaultLimit = 100
    static let maxLimit = 1000

    func register(into router: inout Router) {
        router.get("/customer_api/v1/instances/:instance/devices/invalidations", bodyLimit: .noBody) { try await feed($0) }
    }

    func feed(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .devicesRead)
        try app.checkRateLimit(instance)
        let since = try Self.cursor(request.queryValue("since"))
        var limit = Self.defaultLimit
        if let text = request.queryValue("limit") {
            guard let value = Int(text), (1...Self.maxLimit).contains(value) else {
                throw BeamsError(400, "Bad request", "`limit` must be a number between 1 and \(Self.maxLimit)")
            }
            limit = value
        }
        let events = try await app.store.invalidations(instanceID: instance.id, after: since, limit: limit)
        return .json(.object([
            "events": .array(events.map(Self.render)),
            "next_cursor": .string(String(events.last?.id ?? since)),
        ]))
    }

    /// The cursor: the `next_cursor` of an earlier page (a decimal event sequence number); none: from the oldest
    /// event still retained.
    static func cursor(_ text: String?) throws(BeamsError) -> Int64 {
        guard let text else { return 0 }
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let value = Int64(text) else {
            throw BeamsError(400, "Bad request", "`since` must be a `next_cursor` from an earlier page")
        }
        return value
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
