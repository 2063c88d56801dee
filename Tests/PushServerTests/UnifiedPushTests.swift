import BeamsModel
import Foundation
import HTTPClient
import JSON
import JWTSigner
import PushStore
import TestSupport
import WebPush
import XCTest

@testable import PublishEngine
@testable import PushServer

/// UnifiedPush without sockets: the publish section, the registration body, the answers' meaning, the config.
final class UnifiedPushTests: XCTestCase {
    private let instanceID = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"

    private func section(_ json: String) throws(BeamsError) -> UnifiedPushTemplate {
        try UnifiedPushTemplate.parse(JSONValue.parse(Array(json.utf8))?.objectValue ?? [:])
    }

    func testSectionCarriesWebFieldsPlusUrgencyAndTopicIntoThePlan() throws {
        let body =
            #"{"interests":["a"],"unifiedpush":{"notification":{"title":"T"},"data":{"k":1},"time_to_live":60,"urgency":"high","topic":"t1"}}"#
        let request = try PublishRequest.parse(Array(body.utf8), kind: .interests)
        XCTAssertEqual(request.platforms, ["unifiedpush"])
        let plan = try PublishPlan(request: request, body: Array(body.utf8), instanceID: instanceID, publishID: "p")
        let decoded = try PublishPlan(decoding: plan.encoded())
        XCTAssertEqual(decoded, plan)
        XCTAssertTrue(decoded.carries(.unifiedpush) && !decoded.carries(.web))
        let message = try XCTUnwrap(decoded.unifiedPushMessage)
        XCTAssertEqual(message.ttl, 60)
        XCTAssertEqual(message.urgency, .high)
        XCTAssertEqual(message.topic, "t1")
        XCTAssertEqual(
            JSONValue.parse(message.payload),
            JSONValue.parse(
                Array(
                    #"""
                    {"notification":{"title":"T"},"data":{"k":1,"pusher":{"instanceId":"\#(instanceID)","publishId":"p","hasDisplayableContent":true,"hasData":true}}}
                    """#.utf8)))
    }

    func testSectionErrorsNameTheMemberAndTheEncryptedSizeLimitIsCheckedAtIntake() throws {
        for (json, path) in [
            (#"{"urgency":"urgent"}"#, "unifiedpush.urgency"), (#"{"topic":"has space"}"#, "unifiedpush.topic"),
            (#"{"colour":"red"}"#, "unifiedpush.colour"), (#"{"data":{"pusher":1}}"#, "unifiedpush.data"),
            (#"{"time_to_live":-1}"#, "unifiedpush.time_to_live"),
        ] {
            XCTAssertThrowsError(try section(json), json) { error in
                XCTAssertTrue((error as? BeamsError)?.detail.contains("`\(path)`") == true, "\(error)")
            }
        }
        // 3993 clear-text bytes encrypt to exactly 4096 (RFC 8291 header 86 + tag 16 + delimiter 1); one more is refused.
        XCTAssertEqual(WebTemplate.maxPayloadBytes + 86 + 16 + 1, 4096)
        let filler = String(repeating: "x", count: 4000)
        let template = try section(#"{"data":{"blob":"\#(filler)"}}"#)
        XCTAssertThrowsError(try template.payload(instanceID: instanceID, publishID: "p")) { error in
            let beams = error as? BeamsError
            XCTAssertEqual(beams?.statusCode, 422)
            XCTAssertTrue(beams?.detail.contains("`unifiedpush`") == true, "\(String(describing: beams))")
        }
    }

    private func subscriptionBody(_ endpoint: String) throws -> [String: JSONValue] {
        let point = try P256KeyPair.generate().publicPoint
        return [
            "endpoint": .string(endpoint),
            "keys": .object([
                "p256dh": .string(Base64URL.encode(point) + "="),
                "auth": .string(Base64URL.encode([UInt8](repeating: 7, count: 16))),
            ]),
        ]
    }

    func testRegistrationBodyIsCheckedAndStoredCanonicallyWithThePortRule() throws {
        let (token, url) = try DeviceToken.unifiedPush(
            try subscriptionBody("https://ntfy.example.org/upAbC?up=1"), ports: [443])
        XCTAssertEqual(url.host, "ntfy.example.org")
        let stored = try XCTUnwrap(JSONValue.parse(Array(token.utf8))?.objectValue)
        XCTAssertEqual(stored["endpoint"]?.stringValue, "https://ntfy.example.org/upAbC?up=1")
        XCTAssertFalse(stored["keys"]?["p256dh"]?.stringValue?.hasSuffix("=") ?? true, "unpadded, one form per key")
        XCTAssertNotNil(WebPushSubscriptions.parse(token), "the dispatch reads what registration stores")
        for (endpoint, fragment) in [
            ("https://ntfy.example.org:8443/up", "port 8443"), ("http://ntfy.example.org/up", "https"),
            ("https://a@ntfy.example.org/up", "credentials"),
            ("https://ntfy.example.org/" + String(repeating: "u", count: 1000), "1000 bytes"),
        ] {
            XCTAssertThrowsError(try DeviceToken.unifiedPush(try subscriptionBody(endpoint), ports: [443]), endpoint) {
                error in
                XCTAssertTrue(((error as? BeamsError)?.detail ?? "").contains(fragment), "\(endpoint): \(error)")
            }
        }
        XCTAssertNoThrow(
            try DeviceToken.unifiedPush(try subscriptionBody("https://ntfy.example.org:8443/up"), ports: [443, 8443]))
        XCTAssertThrowsError(try DeviceToken.unifiedPush(["endpoint": .string("https://x.example/")], ports: [443]))
    }

    func testALookUpBySubscriptionInAnyFormFindsTheStoredTokenAndTheEndpointAloneIsRefused() throws {
        let body = try subscriptionBody("https://ntfy.example.org/upAbC?up=1")
        let (stored, _) = try DeviceToken.unifiedPush(body, ports: [443])
        let keys = try XCTUnwrap(body["keys"]?.objectValue)
        // Other member order, expirationTime, padded keys; and the same JSON as the Web SDK's base64 token.
        let typed =
            #"{"keys":{"auth":"\#(keys["auth"]!.stringValue!)==","p256dh":"\#(keys["p256dh"]!.stringValue!)"},"#
            + #""expirationTime":null,"endpoint":"https://ntfy.example.org/upAbC?up=1"}"#
        XCTAssertEqual(try DeviceToken.subscriptionLookupKey(typed), stored)
        XCTAssertEqual(try DeviceToken.subscriptionLookupKey(Base64URL.encode(Array(typed.utf8))), stored)
        for value in [
            "https://ntfy.example.org/upAbC?up=1", "{}", #"{"endpoint":"<img src=x>","keys":{}}"#, "not base64 !",
        ] {
            XCTAssertThrowsError(try DeviceToken.subscriptionLookupKey(value), value) { error in
                XCTAssertEqual((error as? BeamsError)?.statusCode, 400, value)
            }
        }
    }

    func testNtfy507IsItsOwnReasonAndKeepsTheDeviceWhileGoneAnswersRemoveIt() {
        XCTAssertEqual(
            DeliveryOutcome.unifiedPushVerdict(.response(.retry(status: 507, after: nil), attempts: 4)),
            .failed("NoActiveSubscriber", status: 507))
        XCTAssertEqual(
            DeliveryOutcome.unifiedPushVerdict(.response(.subscriptionGone(status: 404), attempts: 1)),
            .failed("SubscriptionGone", status: 404, effect: .badToken))
        XCTAssertEqual(
            DeliveryOutcome.unifiedPushVerdict(.response(.payloadTooLarge, attempts: 1)),
            .failed("PayloadTooLarge", status: 413))
        XCTAssertEqual(
            DeliveryOutcome.unifiedPushVerdict(.response(.accepted(status: 200), attempts: 1)), .accepted(status: 200))
        XCTAssertEqual(DeliveryOutcome.unifiedPushVerdict(.failure(.tooManyHosts("h"))), .failed("TooManyHosts"))
        XCTAssertEqual(
            DeliveryOutcome.verdict(.response(.retry(status: 507, after: nil), attempts: 4)),
            .failed("PushServiceUnavailable", status: 507), "browsers' push services keep the generic reason")
        for reason in ["NoActiveSubscriber", "TooManyHosts", "NoUnifiedPushConfig"] {
            XCTAssertTrue(DeliveryOutcome.webReasons.contains(reason), reason)
        }
    }

    private func vapidKeyFile(_ directory: String) throws -> String {
        let path = "\(directory)/vapid.pem"
        try VAPIDKeyPair.generate().privateKeyPEM.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func testConfigNeedsWebAndWarnsForEveryAddressAllowance() throws {
        let directory = try TestKeys.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let vapid = try vapidKeyFile(directory)
        func config(_ sections: String) -> Data {
            Data(
                #"{"instances":[{"id":"\#(instanceID)","secretKey":"0123456789abcdef0123456789abcdef",\#(sections)}]}"#
                    .utf8)
        }
        let (loaded, warnings) = try ServerConfig.parse(
            config(
                #"""
                "web":{"vapidKeyFile":"\#(vapid)","subject":"mailto:ops@example.com"},
                "unifiedpush":{"ports":[443,8443],"maxHosts":5,"maxInFlightPerHost":4,"allowedDestinations":["127.0.0.1"]}
                """#))
        let settings = try XCTUnwrap(loaded.instances.first?.unifiedpush)
        XCTAssertEqual(settings.ports, [443, 8443])
        XCTAssertEqual(settings.maxHosts, 5)
        XCTAssertEqual(settings.maxInFlightPerHost, 4)
        XCTAssertEqual(settings.allowedDestinations.count, 1)
        XCTAssertTrue(
            warnings.contains { $0.description.contains("unifiedpush.allowedDestinations[0]") }, "\(warnings)")
        let (plain, quiet) = try ServerConfig.parse(
            config(#""web":{"vapidKeyFile":"\#(vapid)","subject":"mailto:ops@example.com"},"unifiedpush":{}"#))
        XCTAssertEqual(plain.instances.first?.unifiedpush?.ports, [443])
        XCTAssertFalse(quiet.contains { $0.description.contains("unifiedpush") }, "off by default: no warning")
        XCTAssertThrowsError(try ServerConfig.parse(config(#""unifiedpush":{}"#))) { error in
            XCTAssertTrue("\(error)".contains("needs the instance's web section"), "\(error)")
        }
        XCTAssertThrowsError(
            try ServerConfig.parse(
                config(
                    #""web":{"vapidKeyFile":"\#(vapid)","subject":"mailto:ops@example.com"},"unifiedpush":{"ports":[0]}"#
                )))
    }
}
