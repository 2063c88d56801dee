import BeamsModel
import ConfigModel
import Foundation
import HTTPServer
import JSON
import Logging
import PushStore

/// Beyond Beams: the "why didn't my push arrive" API, behind the instance secret. Look a device up by id or token
/// (environment, interests, user, last registration, last APNs result), list a user's devices, count an interest's
/// subscribers.
struct AdminAPI: Sendable {
    let app: AppContext

    func register(into router: inout Router) {
        let base = "/admin_api/v1/instances/:instance"
        router.get("\(base)/devices/:device", bodyLimit: .noBody) { try await device($0) }
        router.get("\(base)/devices", bodyLimit: .noBody) { try await deviceByToken($0) }
        router.get("\(base)/users/*user", bodyLimit: .noBody) { try await userDevices($0) }
        router.get("\(base)/interests/:interest", bodyLimit: .noBody) { try await interest($0) }
    }

    func device(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try await authorized(request)
        guard
            let device = try await app.deviceRegistry.device(
                instanceID: instance.id, id: request.parameters["device"] ?? "")
        else {
            throw BeamsError.deviceNotFound
        }
        return .json(try await render(device, withInterests: true))
    }

    func deviceByToken(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try await authorized(request)
        guard let raw = request.queryValue("token"), !raw.isEmpty else {
            throw BeamsError(400, "Bad request", "Give a device id in the path or ?token=<device token>")
        }
        guard let platform = Platform(rawValue: request.queryValue("platform") ?? "apns") else {
            throw BeamsError(400, "Bad request", "`platform` must be apns, fcm, web, unifiedpush or hms")
        }
        let token: String
        switch platform {
        case .apns: token = raw.lowercased()
        case .web, .unifiedpush: token = try DeviceToken.subscriptionLookupKey(raw)
        case .fcm, .hms: token = raw
        }
        guard
            let device = try await app.deviceRegistry.device(instanceID: instance.id, platform: platform, token: token)
        else {
            throw BeamsError(404, "Device not found", "No device with this token is registered")
        }
        return .json(try await render(device, withInterests: true))
    }

    func userDevices(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try await authorized(request)
        let user = request.parameters["user"] ?? ""
        let devices = try await app.deviceRegistry.devices(instanceID: instance.id, userID: user)
        var rendered: [JSONValue] = []
        for device in devices { rendered.append(try await render(device, withInterests: false)) }
        return .json(.object(["userId": .string(user), "devices": .array(rendered)]))
    }

    func interest(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try await authorized(request)
        let name = try DeviceAPI.interest(request)
        let count = try await app.deviceRegistry.subscriberCount(instanceID: instance.id, interest: name)
        return .json(.object(["interest": .string(name), "subscribers": .int(count)]))
    }

    private func authorized(_ request: HTTPRequest) async throws(BeamsError) -> InstanceConfig {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .devicesRead)
        return instance
    }

    /// The health card of one device (also shown by the console's test push for a known token).
    func render(_ device: Device, withInterests: Bool) async throws -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(device.id),
            "platform": .string(device.platform.rawValue),
            "token": .string(device.token),
            "environment": .string(device.environment.rawValue),
            "environmentDeclared": .bool(device.environmentDeclared),
            "bundleIdentifier": device.bundleID.map(JSONValue.string) ?? .null,
            "metadata": device.metadataJSON,
            "userId": device.userID.map(JSONValue.string) ?? .null,
            "createdAt": .string(device.createdAt.iso8601),
            "lastRegisteredAt": .string(device.lastRegisteredAt.iso8601),
            "valid": .bool(device.invalidatedAt == nil),
            "invalidatedAt": device.invalidatedAt.map { .string($0.iso8601) } ?? .null,
            "lastDelivery": device.lastResult.map { result in
                .object([
                    "status": .int(result.status),
                    "reason": result.reason.map(JSONValue.string) ?? .null,
                    "at": .string(result.at.iso8601),
                ])
            } ?? .null,
        ]
        if withInterests,
            let page = try await app.deviceRegistry.interests(
                instanceID: device.instanceID, deviceID: device.id, limit: 100, cursor: nil)
        {
            object["interests"] = .array(page.interests.map(JSONValue.string))
            object["moreInterests"] = .bool(page.nextCursor != nil)
        }
        return .object(object)
    }
}
