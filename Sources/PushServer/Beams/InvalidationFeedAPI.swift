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

    func register(into router: inout Router) {
        router.get("/customer_api/v1/instances/:instance/devices/invalidations", bodyLimit: .noBody) {
            try await feed($0)
        }
    }

    func feed(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .devicesRead)
        try app.checkRateLimit(instance)
        // `since`: the `next_cursor` of an earlier page; none: from the oldest event still retained.
        let page = try PageQuery(request)
        let events = try await app.store.invalidations(instanceID: instance.id, after: page.since, limit: page.limit)
        return .json(
            .object([
                "events": .array(events.map(DeviceInvalidationEvent.render)),
                "next_cursor": .string(String(events.last?.id ?? page.since)),
            ]))
    }
}
