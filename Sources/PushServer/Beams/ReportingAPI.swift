import BeamsModel
import ConfigModel
import Foundation
import HTTPServer
import Logging
import PushStore

/// `POST /reporting_api/v2/instances/{id}/events`: the client SDKs report deliveries and opens
/// (docs/BEAMS-PROTOCOL.md §5). No auth, so events are checked against the store (`ReportingPolicy`). `event` is matched
/// case-insensitively (iOS sends `Delivery`, web `delivery`).
///
/// Never 404: the iOS SDK reads any 404 as "device deleted", re-registers and replays the report, forever. An
/// unknown instance or device is a 400, as Beams documents for this API, and so is any other path under
/// `/reporting_api/`.
struct ReportingAPI: Sendable {
    let app: AppContext
    /// Called for each new event that should reach the instance's user webhooks.
    let onUserEvent: @Sendable (ReportingEvent) -> Void

    /// An iOS event is about 300 bytes.
    static let bodyLimit = BodyLimit.beams(maxKiB: 4)

    /// The web service worker posts reports cross-origin: both routes answer CORS preflights and carry
    /// `Access-Control-Allow-Origin` on every answer (`CORSPolicy`).
    func register(into router: inout Router) {
        let app = self.app
        let cors = CORSPolicy(instances: app.directory)
        let events = "/reporting_api/v2/instances/:instance/events"
        router.add(
            .post, events, bodyLimit: Self.bodyLimit, admission: { try admit($0) },
            responseHook: cors.decorate
        ) { try await report($0) }
        router.add(
            .post, "/reporting_api/*rest", bodyLimit: Self.bodyLimit,
            admission: { request throws(BeamsError) in try app.checkClientLimit(request) },
            responseHook: cors.decorate
        ) { _ in
            throw BeamsError(
                400, "Bad request", "Unknown reporting API path: use /reporting_api/v2/instances/{instance}/events")
        }
        cors.registerPreflights([events, "/reporting_api/*rest"], into: &router)
    }

    /// On the event loop (`HTTPAdmission`): charges the client's address, checks the origin and the JSON media
    /// type (every SDK sends `application/json`; docs/SECURITY.md), then charges the instance, so a refused report
    /// never costs a task.
    func admit(_ request: HTTPRequest) throws(BeamsError) {
        try app.checkClientLimit(request)
        let instance = try instance(request)
        try CORSPolicy.checkOrigin(request, instance)
        try app.requireJSONContentType(request, missingAllowed: false)
        try app.checkInstanceLimit(app.limiters.reporting, instance)
    }

    /// The instance named in the path; 400 (never 404) when it is malformed or unknown.
    func instance(_ request: HTTPRequest) throws(BeamsError) -> InstanceConfig {
        let rawID = request.parameters["instance"] ?? ""
        guard UUID(uuidString: rawID) != nil else {
            throw BeamsError(
                400, "Bad request",
                "Invalid instance id, expected to be in this format: 426abfc7-41fe-492f-bcf1-27586fa9bd3f")
        }
        guard let instance = app.directory.config(rawID) else {
            throw BeamsError(400, "Bad request", "Could not find the instance")
        }
        return instance
    }

    func report(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try instance(request)
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
        guard body["timestampSecs"] != nil else {
            throw BeamsError(400, "Bad request", "Missing required field `timestampSecs`")
        }
        guard let seconds = ReportingPolicy.timestamp(body["timestampSecs"]) else {
            throw BeamsError(400, "Bad request", "`timestampSecs` must be a number of seconds since 1970")
        }
        // Bounded like the values they are compared with, so no oversized string reaches the store.
        guard publishID.utf8.count <= 200, deviceID.utf8.count <= 200 else {
            throw BeamsError(400, "Bad request", "`publishId` and `deviceId` must be at most 200 bytes")
        }

        let facts = try await app.eventStore.reportFacts(
            instanceID: instance.id, deviceID: deviceID, publishID: publishID)
        guard let device = facts.device else { throw BeamsError(400, "Bad request", "Could not find the device") }
        let eventLabel = kind == .delivery ? "delivery" : "open"
        switch ReportingPolicy.judge(
            timestampSecs: seconds, deviceCreatedAt: device.createdAt,
            deviceUserID: device.userID, publish: facts.publish, now: app.now())
        {
        case .ignore(let reason):
            app.metrics.increment(.reportedEventsIgnored, ["reason": reason.rawValue])
            return .emptyOK
        case .record(let at, let userID, let notifyUser):
            let event = ReportingEvent(
                instanceID: instance.id, publishID: publishID, deviceID: device.id,
                userID: userID, kind: kind, at: at)
            let new = try await app.eventStore.recordEvents([event])
            app.metrics.increment(.reportedEvents, ["event": eventLabel])
            if new > 0 && notifyUser && userID != nil { onUserEvent(event) }
            return .emptyOK
        }
    }
}
