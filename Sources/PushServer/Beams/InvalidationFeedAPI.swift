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
            "events": .array(events.map(DeviceInvalidationEvent.render)),
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
}
