import BeamsModel
import JSON
import PushStore

/// The body of `POST …/console/test-push`, checked field by field before any look-up or send (docs/API.md,
/// "Console test push"). The device is named by `deviceToken` (with `platform`, default `apns`: an APNs token as
/// Xcode prints it, an FCM or HMS token as registered, a web or UnifiedPush subscription as the app holds it) or by
/// `deviceId`. APNs takes `alert` or `payload` and its header fields; the other platforms take `title`, `body` and
/// `data`, or `payload` as that platform's publish section. Fields of the other kind are refused by name, so a
/// page or script that confuses them learns it instead of seeing them ignored.
struct TestPushRequest: Sendable, Equatable {
    /// How the device is named.
    enum DeviceName: Sendable, Equatable {
        case token(String)
        case id(String)
    }

    var device: DeviceName
    /// As given; nil: `apns` for a token, the device's own for an id.
    var platform: Platform?
    /// The APNs fields (`deviceToken` is filled in once the device is known).
    var apns: TestPush.Options
    /// The other platforms' fields.
    var content: PlatformTestPush.Content
    /// The fields given (not null), for the checks that need the device's platform.
    var given: Set<String>

    static let apnsFields: Set<String> = [
        "environment", "alert", "pushType", "priority", "topic", "collapseId", "expiration",
    ]
    static let contentFields: Set<String> = ["title", "body", "data"]
    static let knownFields: Set<String> = apnsFields.union(contentFields).union([
        "deviceToken", "deviceId", "platform", "payload",
    ])

    /// Reads the body's fields. Unknown fields and wrong types are 422s naming the field.
    static func parse(_ body: [String: JSONValue]) throws(BeamsError) -> TestPushRequest {
        if let unknown = body.keys.sorted().first(where: { !knownFields.contains($0) }) {
            throw .schema(unknown, "Unknown field; expected one of \(knownFields.sorted().joined(separator: ", "))")
        }
        func string(_ key: String) throws(BeamsError) -> String? {
            guard let value = body[key], !value.isNull else { return nil }
            guard let text = value.stringValue else { throw .schema(key, PublishRequest.typeMessage("string", value)) }
            return text
        }
        func integer(_ key: String) throws(BeamsError) -> Int? {
            guard let value = body[key], !value.isNull else { return nil }
            guard case .int(let number) = value else {
                throw .schema(key, PublishRequest.typeMessage("integer", value))
            }
            return number
        }
        var platform: Platform?
        if let name = try string("platform") {
            guard let value = Platform(rawValue: name) else {
                throw .schema("platform", "must be one of \(Platform.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            platform = value
        }
        let token = try string("deviceToken")
        let id = try string("deviceId")
        let device: DeviceName
        switch (token, id) {
        case (let token?, nil): device = .token(token)
        case (nil, let id?):
            guard !id.isEmpty else { throw .schema("deviceId", "must not be empty") }
            device = .id(id)
        case (nil, nil): throw .schema("deviceToken", "deviceToken is required")
        case (_?, _?): throw .schema("deviceId", "give deviceToken or deviceId, not both")
        }
        var payload: [UInt8]?
        if let value = body["payload"], !value.isNull {
            switch value {
            // Text is sent byte for byte (what the page's JSON editor holds); an object is re-serialized.
            case .string(let text): payload = Array(text.utf8)
            case .object: payload = value.serialized()
            default: throw .schema("payload", PublishRequest.typeMessage("object", value))
            }
        }
        var data: [String: JSONValue]?
        if let value = body["data"], !value.isNull {
            guard let object = value.objectValue else {
                throw .schema("data", PublishRequest.typeMessage("object", value))
            }
            data = object
        }
        let apns = TestPush.Options(
            deviceToken: token ?? "", environment: try string("environment"), alert: try string("alert"),
            payload: payload, pushType: try string("pushType"), priority: try integer("priority"),
            topic: try string("topic"), collapseID: try string("collapseId"), expiration: try integer("expiration"))
        let content = PlatformTestPush.Content(title: try string("title"), body: try string("body"), data: data)
        return TestPushRequest(
            device: device, platform: platform, apns: apns, content: content,
            given: Set(body.filter { !$0.value.isNull }.keys))
    }

    /// The checks that need the device's platform (known once the device is found): fields of the other kind are
    /// refused, and a non-APNs `payload` must be a JSON object (that platform's publish section).
    /// - Returns: the content to build the message from (non-APNs).
    func content(for platform: Platform) throws(BeamsError) -> PlatformTestPush.Content {
        if platform == .apns {
            if let field = given.intersection(Self.contentFields).sorted().first {
                throw .schema(
                    field, "applies to fcm, web, unifiedpush and hms devices; an APNs test push takes alert or payload")
            }
            return content
        }
        if let field = given.intersection(Self.apnsFields).sorted().first {
            throw .schema(
                field, "applies to APNs only; a \(platform.rawValue) test push takes title, body and data, or payload")
        }
        var content = content
        if let bytes = apns.payload {
            guard let section = JSONValue.parse(bytes)?.objectValue else {
                throw .schema("payload", "must be a JSON object (the \(platform.rawValue) section of a publish)")
            }
            content.section = section
        }
        return content
    }
}
