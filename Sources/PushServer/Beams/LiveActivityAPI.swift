import BeamsModel
import ConfigModel
import Foundation
import HTTPServer
import JSON
import Logging
import PushStore

/// The device API's Live Activity extension (docs/API.md "Live Activities"): an app stores its push-to-start token
/// per attributes type and the update token of each running activity, and deletes the activity when it ends. Like
/// the rest of the device API it takes no secret (the device id is the capability), so every path segment and body
/// member is bounded and checked before the store sees it; rows per device are bounded by
/// `limits.maxLiveActivityStartTokensPerDevice` and `limits.maxLiveActivitiesPerDevice`.
struct LiveActivityAPI: Sendable {
    let app: AppContext

    /// `{"token": 400 hex digits}` fits many times over.
    static let startTokenBody = BodyLimit(
        maxBytes: 2048,
        error: HTTPError(
            .payloadTooLarge, title: "Payload Too Large", detail: "Request body size is too large (max 2KiB)"))
    /// Token, attributes type, reference and expiry.
    static let activityBody = BodyLimit(
        maxBytes: 4096,
        error: HTTPError(
            .payloadTooLarge, title: "Payload Too Large", detail: "Request body size is too large (max 4KiB)"))

    /// The routes under `deviceBase` (`…/devices/:platform/:device`): method, pattern, body limit and handler. The
    /// device API registers them through its own `route`, so they share its rate limits and CORS.
    static func routes(deviceBase base: String) -> [(
        HTTPMethod, String, BodyLimit, @Sendable (LiveActivityAPI, HTTPRequest) async throws -> HTTPResponse
    )] {
        let start = "\(base)/live-activity/start-tokens/:attributesType"
        let activity = "\(base)/live-activity/activities/:activity"
        return [
            (.get, "\(base)/live-activity", .noBody, { try await $0.list($1) }),
            (.put, start, startTokenBody, { try await $0.putStartToken($1) }),
            (.delete, start, .noBody, { try await $0.delete($1, kind: .start) }),
            (.put, activity, activityBody, { try await $0.putActivity($1) }),
            (.delete, activity, .noBody, { try await $0.delete($1, kind: .update) }),
        ]
    }

    private var limits: LiveActivityLimits {
        LiveActivityLimits(
            maxStartTokensPerDevice: app.config.limits.maxLiveActivityStartTokensPerDevice,
            maxActivitiesPerDevice: app.config.limits.maxLiveActivitiesPerDevice)
    }

    private var registry: any LiveActivityRegistry { app.store }

    // MARK: Handlers

    /// `PUT …/live-activity/start-tokens/{attributesType}` `{"token": hex}`.
    func putStartToken(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, deviceID) = try deviceRef(request)
        let type = try attributesType(request)
        let body = try object(request, allowed: ["token"])
        let token = try LiveActivityTokenBody.token(body)
        let result = try await registry.putLiveActivityStartToken(
            instanceID: instance.id, deviceID: deviceID, attributesType: type, token: token, limits: limits,
            now: app.now())
        try check(
            result, bound: "attributes types with a push-to-start token",
            setting: "limits.maxLiveActivityStartTokensPerDevice")
        app.logger.info(
            "Live Activity start token stored",
            ["device": deviceID, "attributesType": type, "token": Redact.token(token)])
        return .emptyOK
    }

    /// `PUT …/live-activity/activities/{activityId}` `{"token", "attributesType", "reference"?, "expiresAt"?}`.
    func putActivity(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, deviceID) = try deviceRef(request)
        let activityID = try Self.activityID(request)
        let body = try object(request, allowed: ["token", "attributesType", "reference", "expiresAt"])
        let token = try LiveActivityTokenBody.token(body)
        guard let typeValue = body["attributesType"], !typeValue.isNull else {
            throw BeamsError.schema("attributesType", "attributesType is required")
        }
        guard let type = typeValue.stringValue, LiveActivityToken.isValidAttributesType(type) else {
            throw BeamsError.schema("attributesType", LiveActivityPayload.attributesTypeRule)
        }
        var reference: String?
        if let value = body["reference"], !value.isNull {
            guard let text = value.stringValue,
                LiveActivityToken.isValidPrintable(text, maxBytes: LiveActivityToken.maxReferenceBytes)
            else {
                throw BeamsError.schema(
                    "reference", "Must be 1-\(LiveActivityToken.maxReferenceBytes) printable ASCII characters")
            }
            reference = text
        }
        let now = app.now()
        let expiresAt = try LiveActivityTokenBody.expiresAt(body["expiresAt"], now: now)
        let result = try await registry.putLiveActivityUpdateToken(
            instanceID: instance.id, deviceID: deviceID, activityID: activityID, attributesType: type, token: token,
            reference: reference, expiresAt: expiresAt, limits: limits, now: now)
        try check(result, bound: "running Live Activities", setting: "limits.maxLiveActivitiesPerDevice")
        app.logger.info(
            "Live Activity update token stored",
            ["device": deviceID, "attributesType": type, "token": Redact.token(token)])
        return .emptyOK
    }

    /// `DELETE` of a start token or an activity (the app reports the activity ended or dismissed). Deleting a row
    /// that does not exist succeeds (the app may retry); an unknown device is 404.
    func delete(_ request: HTTPRequest, kind: LiveActivityToken.Kind) async throws -> HTTPResponse {
        let (instance, deviceID) = try deviceRef(request)
        let name = kind == .start ? try attributesType(request) : try Self.activityID(request)
        guard
            let existed = try await registry.deleteLiveActivityToken(
                instanceID: instance.id, deviceID: deviceID, kind: kind, name: name)
        else { throw BeamsError.deviceNotFound }
        if existed { app.logger.info("Live Activity token deleted", ["device": deviceID, "kind": kind.rawValue]) }
        return .emptyOK
    }

    /// `GET …/live-activity`: the device's rows, tokens masked.
    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, deviceID) = try deviceRef(request)
        guard let rows = try await registry.liveActivityTokens(instanceID: instance.id, deviceID: deviceID) else {
            throw BeamsError.deviceNotFound
        }
        var starts: [JSONValue] = []
        var activities: [JSONValue] = []
        for row in rows {
            var object: [String: JSONValue] = [
                "attributesType": .string(row.attributesType), "token": .string(Redact.token(row.token)),
                "updatedAt": .string(row.updatedAt.iso8601),
            ]
            if row.kind == .start {
                starts.append(.object(object))
                continue
            }
            object["activityId"] = row.activityID.map(JSONValue.string) ?? .null
            object["reference"] = row.reference.map(JSONValue.string) ?? .null
            object["expiresAt"] = row.expiresAt.map { .string($0.iso8601) } ?? .null
            activities.append(.object(object))
        }
        return .json(.object(["startTokens": .array(starts), "activities": .array(activities)]))
    }

    // MARK: Checks

    /// The instance and device id; Live Activities exist only on APNs devices.
    private func deviceRef(_ request: HTTPRequest) throws(BeamsError) -> (InstanceConfig, String) {
        let instance = try app.instance(request)
        guard try DeviceAPI.platform(request) == .apns else {
            throw BeamsError(404, "Not found", "Live Activities exist only for apns devices")
        }
        guard let id = request.parameters["device"], !id.isEmpty, id.utf8.count <= 128 else {
            throw BeamsError(400, "Bad request", "Invalid device id")
        }
        return (instance, id)
    }

    private func attributesType(_ request: HTTPRequest) throws(BeamsError) -> String {
        let name = request.parameters["attributesType"] ?? ""
        guard LiveActivityToken.isValidAttributesType(name) else {
            throw BeamsError(
                400, "Bad request", "Invalid attributes type in the path: \(LiveActivityPayload.attributesTypeRule)")
        }
        return name
    }

    static func activityID(_ request: HTTPRequest) throws(BeamsError) -> String {
        let id = request.parameters["activity"] ?? ""
        guard LiveActivityToken.isValidPrintable(id, maxBytes: LiveActivityToken.maxNameBytes) else {
            throw BeamsError(
                400, "Bad request", "Invalid activity id in the path: \(LiveActivityPayload.activityIDRule)")
        }
        return id
    }

    private func object(_ request: HTTPRequest, allowed: Set<String>) throws(BeamsError) -> [String: JSONValue] {
        let body = try app.jsonObject(request)
        if let unknown = body.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw BeamsError.schema(
                String(unknown.prefix(64)), "Unknown member; allowed: \(allowed.sorted().joined(separator: ", "))")
        }
        return body
    }

    private func check(_ result: LiveActivityPutResult, bound: String, setting: String) throws(BeamsError) {
        switch result {
        case .stored: return
        case .deviceNotFound: throw BeamsError.deviceNotFound
        case .limitReached(let limit):
            throw BeamsError(
                422, "Unprocessable Entity",
                "The device already has \(limit) \(bound) (\(setting)); delete one first")
        }
    }
}
