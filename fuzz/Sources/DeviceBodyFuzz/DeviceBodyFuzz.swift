import Foundation
import JSON
import PushStore
@testable import PushServer

/// One libFuzzer input: the first byte picks the route, the rest is the body of a device API request (no secret:
/// any client can send these). Runs each handler's checks up to the store call, as `DeviceAPI` and
/// `LiveActivityAPI` do.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceBody(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size >= 1 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let route = input[0] % 5
    guard let body = JSONValue.parse(Array(input[1...]))?.objectValue else { return 0 }
    _ = try? check(route: route, body)
    return 0
}

func check(route: UInt8, _ body: [String: JSONValue]) throws {
    switch route {
    case 0, 1, 2:
        // Registration and token refresh: the token in the platform's form, bundle id, metadata, environment.
        let platform: Platform = [.apns, .fcm, .web][Int(route)]
        guard let raw = body["token"]?.stringValue, !raw.isEmpty else { return }
        _ = try DeviceAPI.normalizedToken(raw, platform: platform)
        _ = try DeviceAPI.metadataText(body["metadata"])
        if let name = body["environment"]?.stringValue { _ = PushEnvironment(rawValue: name.lowercased()) }
    case 3:
        // Time zone and interests.
        if case .string(let name)? = body["timeZone"] { _ = TimeZoneName.problem(name) }
        for element in body["interests"]?.arrayValue ?? [] {
            if let name = element.stringValue { _ = InterestName.isValid(name) }
        }
    default:
        // A Live Activity's update token.
        _ = try LiveActivityAPI.token(body)
        if let type = body["attributesType"]?.stringValue { _ = LiveActivityToken.isValidAttributesType(type) }
        if let reference = body["reference"]?.stringValue {
            _ = LiveActivityToken.isValidPrintable(reference, maxBytes: LiveActivityToken.maxReferenceBytes)
        }
        _ = try LiveActivityAPI.expiresAt(body["expiresAt"], now: Date(timeIntervalSince1970: 1_780_000_000))
    }
}
