import Foundation
import HTTPServer
import PushStore

/// `POST /reporting_api/v2/instances/{id}/events`: the client SDKs report deliveries and opens
/// (docs/beams-api.md §5). No auth. `event` is matched case-insensitively (iOS sends `Delivery`, web `delivery`).
struct ReportingAPI: Sendable {
    let app: AppContext
    /// Called for each event that names a user, to fan out instance webhooks.
    let onUserEvent: @Sendable (ReportingEvent) -> Void

    func register(into router: inout Router) {
        router.post("/reporting_api/v2/instances/:instance/events", bodyLimit: BodyLimit(maxBytes: 16 * 1024)) {
            try await report($0)
        }
    }

    func report(_ request: HTTPRequest) async throws -> HTTPResponse {
        let rawID = request.parameters["instance"] ?? ""
        guard UUID(uuidString: rawID) != nil else {
            throw BeamsError(400, "Bad request",
                             "Invalid instance id, expected to be in this format: 426abfc7-41fe-492f-bcf1-27586fa9bd3f")
        }
        let instance = try app.instance(request)
        let body = try app.jsonObject(request)
        func required(_ key: String) throws(BeamsError) -> String {
            guard let value = body[key]?.stringValue, !value.isEmpty else {
                throw BeamsError(400, "Bad request", "Missing required field `\(key)`")
            }
            return value
        }
        let kind: ReportingEvent.Kind
        switch try required("event").lowercased() {
        case "delivery": kind = .delivery
        case "open": kind = .open
        default: throw BeamsError(400, "Bad request", "`event` must be \"delivery\" or \"open\"")
        }
        let publishID = try required("publishId")
        let deviceID = try required("deviceId")
        guard let seconds = body["timestampSecs"]?.intValue, seconds >= 0 else {
            throw BeamsError(400, "Bad request", "Missing required field `timestampSecs`")
        }
        let event = ReportingEvent(instanceID: instance.id, publishID: publishID, deviceID: deviceID,
                                   userID: body["userId"]?.stringValue, kind: kind,
                                   at: Date(timeIntervalSince1970: TimeInterval(seconds)))
        let new = try await app.store.recordEvents([event])
        app.metrics.increment("push_reported_events_total", ["event": kind == .delivery ? "delivery" : "open"])
        if new > 0 && event.userID != nil { onUserEvent(event) }
        return .emptyOK
    }
}
