import ConfigModel
import Foundation
import JSON
import PushStore
import XCTest

@testable import PublishEngine
@testable import PushServer

/// The Beams bridge's pure parts: what an answer from Beams leads to, Beams' 100 requests/s, the collapse ids the
/// local publish and its forward share, and the `beamsBridge` config section.
final class BeamsBridgeTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_700_000_000)

    private func outcome(
        _ status: Int, _ body: String = "", retryAfter: String? = nil, attempts: Int = 0,
        kind: BeamsForwardKind = .publishInterests
    ) -> BeamsForwardOutcome {
        BeamsForwardPolicy.outcome(
            kind: kind, status: status, body: Array(body.utf8), retryAfter: retryAfter,
            attempts: attempts, now: now)
    }

    func testA200KeepsBeamsPublishIDAndARetirementsDoesNot() {
        XCTAssertEqual(outcome(200, #"{"publishId":"pubid-up"}"#), .delivered(upstreamID: "pubid-up"))
        XCTAssertEqual(outcome(200, "{}", kind: .retireDevice), .delivered(upstreamID: nil))
        XCTAssertEqual(
            outcome(404, #"{"error":"Device not found"}"#, kind: .retireDevice), .delivered(upstreamID: nil),
            "a Beams device already gone is retired")
    }

    func testRefusalsAreFinalWithBeamsDescription() {
        for status in [400, 401, 402, 403, 404, 413, 422] {
            XCTAssertEqual(
                outcome(status, #"{"error":"Title","description":"Why"}"#),
                .failed(error: "HTTP \(status): Title: Why"), "\(status)")
        }
        XCTAssertEqual(outcome(401, "not json"), .failed(error: "HTTP 401"))
    }

    func testA429Or5xxIsRetriedAfterTheLongerOfRetryAfterAndTheBackoff() {
        XCTAssertEqual(outcome(429, retryAfter: "7"), .retry(at: now.addingTimeInterval(7), error: "HTTP 429"))
        XCTAssertEqual(
            outcome(503, retryAfter: nil, attempts: 3), .retry(at: now.addingTimeInterval(8), error: "HTTP 503"))
        XCTAssertEqual(
            outcome(500, retryAfter: "1", attempts: 4), .retry(at: now.addingTimeInterval(16), error: "HTTP 500"),
            "a Retry-After shorter than the backoff does not shorten it")
        XCTAssertEqual(outcome(502, attempts: 9), .failed(error: "HTTP 502 (gave up after 10 attempts)"))
        XCTAssertEqual(BeamsForwardPolicy.backoff(attempts: 30), 300)
        XCTAssertEqual(
            BeamsForwardPolicy.outcome(transportError: "connection: refused", attempts: 0, now: now),
            .retry(at: now.addingTimeInterval(1), error: "connection: refused"))
    }

    func testABridgeClientIsStaleOnceItsInstanceIsGoneItsBridgeOffOrItsCAFileReplaced() {
        let id = "8A0C5C1E-4B1E-4F4E-9D55-2F6F8B2B7C11"
        func served(bridge: BeamsBridgeConfig?) -> InstanceConfig {
            var config = InstanceConfig(id: id, secretKey: String(repeating: "s", count: 32), apns: nil, webhook: nil)
            config.beamsBridge = bridge
            return config
        }
        let bridge = BeamsBridgeConfig(
            instanceID: id, secretKey: "beams", baseURL: "https://beams.test", caFile: "/a.pem")
        let key = BeamsBridge.ClientKey(id, bridge)
        XCTAssertEqual(key.instanceID, id.lowercased(), "one client whatever case a forward names the instance in")
        XCTAssertEqual(BeamsBridge.staleClients([key], served: { _ in served(bridge: bridge) }), [], "still served")
        XCTAssertEqual(BeamsBridge.staleClients([key], served: { _ in nil }), [key], "instance deleted")
        XCTAssertEqual(BeamsBridge.staleClients([key], served: { _ in served(bridge: nil) }), [key], "bridge removed")
        var off = bridge
        off.enabled = false
        XCTAssertEqual(BeamsBridge.staleClients([key], served: { _ in served(bridge: off) }), [key], "bridge off")
        var moved = bridge
        moved.caFile = "/b.pem"
        XCTAssertEqual(BeamsBridge.staleClients([key], served: { _ in served(bridge: moved) }), [key], "new CA file")
        moved.caFile = "/a.pem"
        moved.secretKey = "rotated"
        XCTAssertEqual(
            BeamsBridge.staleClients([key], served: { _ in served(bridge: moved) }), [],
            "a new secret is read per attempt: the client stays")
    }

    func testABodyOverBeamsLimitIsRefusedBeforeSending() {
        let interests = BeamsForward(
            instanceID: "i", kind: .publishInterests, key: "p", body: Data(count: 10 * 1024 + 1))
        XCTAssertEqual(
            BeamsForwardPolicy.sizeProblem(interests),
            "body_too_large: 10241 bytes is over Beams' 10 KiB limit for interests publishes; not sent")
        XCTAssertNil(
            BeamsForwardPolicy.sizeProblem(
                BeamsForward(
                    instanceID: "i", kind: .publishInterests, key: "p",
                    body: Data(count: 10 * 1024))))
        XCTAssertNil(
            BeamsForwardPolicy.sizeProblem(
                BeamsForward(
                    instanceID: "i", kind: .publishUsers, key: "p",
                    body: Data(count: 200 * 1024))))
        XCTAssertNotNil(
            BeamsForwardPolicy.sizeProblem(
                BeamsForward(
                    instanceID: "i", kind: .publishUsers, key: "p",
                    body: Data(count: 200 * 1024 + 1))))
    }

    func testTheRateWindowAdmitsAHundredPerSecondAndHonoursAPause() {
        XCTAssertEqual(BeamsRateWindow().limit, 100)
        XCTAssertEqual(BeamsRateWindow().window, 1.2, "a margin over Beams' second for the requests' travel")
        var window = BeamsRateWindow(limit: 100, window: 1)
        for i in 0..<100 { XCTAssertNil(window.take(now: 10 + Double(i) / 1000), "request \(i)") }
        let wait = try? XCTUnwrap(window.take(now: 10.5))
        XCTAssertEqual(wait ?? 0, 0.5, accuracy: 1e-9, "the oldest leaves the window at 11.0")
        XCTAssertNil(window.take(now: 11.0005))
        window.pause(now: 20, seconds: 3)
        XCTAssertEqual(window.take(now: 21) ?? 0, 2, accuracy: 1e-9)
        XCTAssertNil(window.take(now: 23))
    }

    func testCollapseIDsAreAddedOnlyWhereThePublisherSetNone() throws {
        let body =
            #"{"interests":["a"],"apns":{"aps":{"alert":"hi"}},"fcm":{"notification":{"title":"t"}},"web":{"notification":{"title":"t"}}}"#
        let rewritten = try XCTUnwrap(
            JSONValue.parse(BeamsBridgeBody.withCollapseIDs(Array(body.utf8), publishID: "pubid-1"))?.objectValue)
        XCTAssertEqual(rewritten["apns"]?.objectValue?["collapse_id"], .string("pubid-1"))
        XCTAssertEqual(rewritten["fcm"]?.objectValue?["collapse_key"], .string("pubid-1"))
        XCTAssertEqual(rewritten["fcm"]?.objectValue?["notification"]?.objectValue?["tag"], .string("pubid-1"))
        XCTAssertEqual(
            rewritten["web"], JSONValue.parse(Array(#"{"notification":{"title":"t"}}"#.utf8)), "web is left alone")
        let own = #"{"interests":["a"],"apns":{"collapse_id":"mine","aps":{}},"fcm":{"collapse_key":"k","data":{}}}"#
        XCTAssertEqual(
            BeamsBridgeBody.withCollapseIDs(Array(own.utf8), publishID: "pubid-1"), Array(own.utf8),
            "the publisher's own values are kept, bytes unchanged")
        let webOnly = #"{"interests":["a"],  "web":{"notification":{"title":"t"}}}"#
        XCTAssertEqual(BeamsBridgeBody.withCollapseIDs(Array(webOnly.utf8), publishID: "p"), Array(webOnly.utf8))
    }

    func testWhatBeamsDoesNotDefineIsNotForwarded() throws {
        let plain = #"{"interests":["a"],"apns":{"aps":{}}}"#
        XCTAssertEqual(BeamsBridgeBody.forBeams(Array(plain.utf8)), Array(plain.utf8), "unchanged bytes")
        let extended =
            #"{"users":["u"],"webhookUrl":"https://h/x","fcm":{},"hms":{},"unifiedpush":{},"x_delivery":{"sendAt":"2030-01-01T00:00:00Z"}}"#
        let forwarded = try XCTUnwrap(BeamsBridgeBody.forBeams(Array(extended.utf8)))
        XCTAssertEqual(String(decoding: forwarded, as: UTF8.self), #"{"fcm":{},"users":["u"]}"#)
        XCTAssertNil(
            BeamsBridgeBody.forBeams(Array(#"{"interests":["a"],"hms":{}}"#.utf8)), "nothing for Beams' devices")
    }

    func testTheConfigSectionDefaultsToTheInstancesOwnIDAndBeamsHost() throws {
        let id = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
        let json =
            #"{"instances":[{"id":"\#(id)","secretKey":"0123456789abcdef0123456789abcdef","beamsBridge":{"secretKeyEnv":"BEAMS_SECRET"}}]}"#
        let (config, _) = try ServerConfig.parse(Data(json.utf8), environment: ["BEAMS_SECRET": "upstream\n"])
        let bridge = try XCTUnwrap(config.instances[0].beamsBridge)
        XCTAssertEqual(bridge.instanceID, id)
        XCTAssertEqual(bridge.secretKey, "upstream")
        XCTAssertTrue(bridge.enabled && bridge.retireDevices)
        XCTAssertEqual(
            bridge.publishURL(users: true),
            "https://\(id).pushnotifications.pusher.com/publish_api/v1/instances/\(id)/publishes/users")
        XCTAssertEqual(
            bridge.deviceURL(key: "apns/apns-1"),
            "https://\(id).pushnotifications.pusher.com/device_api/v1/instances/\(id)/devices/apns/apns-1")
        let bad =
            #"{"instances":[{"id":"\#(id)","secretKey":"0123456789abcdef0123456789abcdef","beamsBridge":{"instanceId":"x","enabled":false}}]}"#
        XCTAssertThrowsError(try ServerConfig.parse(Data(bad.utf8), environment: [:])) { error in
            let messages = (error as? ConfigError)?.issues.map(\.description) ?? []
            XCTAssertTrue(
                messages.contains("instances[0].beamsBridge.instanceId: must be a UUID (a Beams instance id)"),
                "\(messages)")
            XCTAssertTrue(
                messages.contains { $0.hasPrefix("instances[0].beamsBridge.secretKey: one of") }, "\(messages)")
        }
    }
}
