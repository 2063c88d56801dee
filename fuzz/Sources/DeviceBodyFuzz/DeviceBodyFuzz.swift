import BeamsModel
import Foundation
import FuzzSupport
import JSON
import PushStore

/// One libFuzzer input: the first byte picks the route, the rest is what any client may send without a secret: the
/// body of a device, Live Activity or reporting request, or the `Authorization` header of `PUT …/user`. Runs each
/// handler's checks up to the store call, as `DeviceAPI`, `LiveActivityAPI` and `ReportingAPI` do, through the
/// `BeamsModel` types they call.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceBody(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let input = FuzzInput(data, size, controlBytes: 1) else { return 0 }
    let route = input.control[0] % 7
    if route == 6 {
        // The Beams user token (a JWT signed with the instance secret) the SDK sends when binding a user.
        let header = String(decoding: input.bytes, as: UTF8.self)
        _ = try? BeamsUserToken.verify(authorization: header, instanceID: "fuzz-instance", secret: "fuzz-secret",
                                       now: Int(fuzzIntakeTime.timeIntervalSince1970))
        return 0
    }
    guard let body = JSONValue.parse(input.bytes)?.objectValue else { return 0 }
    _ = try? check(route: route, body)
    return 0
}

/// The checks of route `route` (0-5) on a JSON object body; throws the `BeamsError` the handler would answer with.
func check(route: UInt8, _ body: [String: JSONValue]) throws {
    switch route {
    case 0, 1, 2:
        // Registration and token refresh: the token in the platform's form, bundle id, metadata, environment.
        let platform: Platform = [.apns, .fcm, .web][Int(route)]
        // UnifiedPush registrations and endpoint updates: the subscription shape, checked before any lookup.
        if route == 2 { _ = try? DeviceToken.unifiedPush(body, ports: [443]) }
        guard let raw = body["token"]?.stringValue, !raw.isEmpty else { return }
        // HMS tokens take the same bodies as FCM's (route 1), with the HMS token rule.
        if route == 1 { _ = try? DeviceToken.normalized(raw, platform: .hms) }
        _ = try DeviceToken.normalized(raw, platform: platform)
        _ = try DeviceMetadata.text(body["metadata"])
        if let name = body["environment"]?.stringValue { _ = PushEnvironment(rawValue: name.lowercased()) }
    case 3:
        // Time zone and interests.
        if case .string(let name)? = body["timeZone"] { _ = TimeZoneName.problem(name) }
        for element in body["interests"]?.arrayValue ?? [] {
            if let name = element.stringValue { _ = InterestName.isValid(name) }
        }
    case 5:
        // A delivery or open report: the reported time against a publish the store knows.
        guard let seconds = ReportingPolicy.timestamp(body["timestampSecs"]) else { return }
        let publish = ReportedPublish(kind: .users, createdAt: fuzzIntakeTime.addingTimeInterval(-3600),
                                      startedAt: fuzzIntakeTime.addingTimeInterval(-3500), finishedAt: nil,
                                      targetsDevice: true)
        _ = ReportingPolicy.judge(timestampSecs: seconds, deviceCreatedAt: fuzzIntakeTime.addingTimeInterval(-86400),
                                  deviceUserID: "user-1", publish: publish, now: fuzzIntakeTime)
    case 4:
        // A Live Activity's update token.
        _ = try LiveActivityTokenBody.token(body)
        if let type = body["attributesType"]?.stringValue { _ = LiveActivityToken.isValidAttributesType(type) }
        if let reference = body["reference"]?.stringValue {
            _ = LiveActivityToken.isValidPrintable(reference, maxBytes: LiveActivityToken.maxReferenceBytes)
        }
        _ = try LiveActivityTokenBody.expiresAt(body["expiresAt"], now: fuzzIntakeTime)
    default:
        break
    }
}
