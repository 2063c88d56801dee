import APNsClient
import BeamsModel
import Foundation
import JSON
import PushStore
import XCTest

@testable import PublishEngine
@testable import PushServer

/// A publish to broadcast channels: its body rules, its stored plan and its status, without sockets.
final class BroadcastPublishTests: XCTestCase {
    let channel = "+/8AAAAAAAAAAAAAAAAAAA=="
    let now = 1_800_000_000

    private func parse(_ body: String, maxChannels: Int = 100) throws -> BroadcastPublishRequest {
        try BroadcastPublishRequest.parse(Array(body.utf8), timestamp: now, maxChannels: maxChannels)
    }

    private func assertRefused(
        _ body: String, status: Int = 422, _ fragment: String, maxChannels: Int = 100,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try parse(body, maxChannels: maxChannels), file: file, line: line) { error in
            guard let beams = error as? BeamsError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(beams.statusCode, status, beams.detail, file: file, line: line)
            XCTAssertTrue(beams.detail.contains(fragment), beams.detail, file: file, line: line)
        }
    }

    func testUpdateGetsTheServerTimestampPriority5AndExpiration0() throws {
        let parsed = try parse(
            #"{"channels":["\#(channel)","-_8AAAAAAAAAAAAAAAAAAA"],"apns":{"aps":{"event":"update","content-state":{"s":1}}}}"#
        )
        XCTAssertEqual(parsed.channels.map(\.rawValue), [channel], "the base64url spelling is the same channel")
        XCTAssertEqual(parsed.priority, 5)
        XCTAssertEqual(parsed.expiration, 0)
        XCTAssertEqual(parsed.event, .update)
        XCTAssertEqual(
            JSONValue.parse(parsed.payload),
            .object([
                "aps": .object([
                    "event": "update", "content-state": .object(["s": .int(1)]),
                    "timestamp": .int(now),
                ])
            ]))
    }

    func testEndWithPriorityAndExpiration() throws {
        let parsed = try parse(
            #"{"channels":["\#(channel)"],"apns":{"aps":{"event":"end","dismissal-date":0}},"x_live_activity":{"priority":10,"expiration":\#(now + 60)}}"#
        )
        XCTAssertEqual([parsed.priority, parsed.expiration], [10, now + 60])
        XCTAssertEqual(parsed.event, .end)
    }

    func testStartIsRefusedWithItsOwnMessage() {
        assertRefused(
            #"{"channels":["\#(channel)"],"apns":{"aps":{"event":"start","content-state":{},"attributes-type":"A","attributes":{},"alert":"x"}}}"#,
            "broadcast cannot start a Live Activity")
    }

    func testRefusesBadChannelLists() {
        assertRefused(#"{"apns":{"aps":{"event":"end"}}}"#, "`channels`")
        assertRefused(#"{"channels":[],"apns":{"aps":{"event":"end"}}}"#, "at least 1")
        assertRefused(
            #"{"channels":["\#(channel)","\#(channel)","YWJjZA=="],"apns":{"aps":{"event":"end"}}}"#,
            "at most 2", maxChannels: 2)
        assertRefused(#"{"channels":[1],"apns":{"aps":{"event":"end"}}}"#, "`channels.0`")
        assertRefused(#"{"channels":["a/b\n"],"apns":{"aps":{"event":"end"}}}"#, "`channels.0`")
    }

    func testRefusesBadApsAndOptions() {
        let c = #""channels":["\#(channel)"]"#
        assertRefused(#"{\#(c)}"#, "`apns`")
        assertRefused(#"{\#(c),"apns":{"aps":{"event":"update"}}}"#, "content-state")
        assertRefused(#"{\#(c),"apns":{"aps":{"event":"update","content-state":{},"timestamp":5}}}"#, "timestamp")
        assertRefused(#"{\#(c),"apns":{"aps":{"event":"end"},"data":{}}}"#, "`apns.data`")
        assertRefused(#"{\#(c),"apns":{"aps":{"event":"end"}},"x_live_activity":{"priority":1}}"#, "priority")
        assertRefused(#"{\#(c),"apns":{"aps":{"event":"end"}},"x_live_activity":{"expiration":1.5}}"#, "expiration")
        assertRefused(
            #"{\#(c),"apns":{"aps":{"event":"end"}},"x_live_activity":{"expiration":\#(now + 31 * 86400)}}"#,
            "expiration")
        assertRefused(#"{\#(c),"apns":{"aps":{"event":"end"}},"webhookUrl":"https://x"}"#, "Unknown member")
        assertRefused("[1]", status: 400, "JSON object")
        let pad = String(repeating: "x", count: 5200)
        assertRefused(#"{\#(c),"apns":{"aps":{"event":"update","content-state":{"p":"\#(pad)"}}}}"#, "5120")
    }

    func testPlanRoundTripsAndVersion3PlansStillLoad() throws {
        let parsed = try parse(
            #"{"channels":["\#(channel)"],"apns":{"aps":{"event":"end"}},"x_live_activity":{"priority":10}}"#)
        let body = Array(#"{"channels":["x"]}"#.utf8)
        let plan = PublishPlan(broadcast: BroadcastPlan(parsed), body: body)
        let decoded = try PublishPlan(decoding: plan.encoded())
        XCTAssertEqual(decoded, plan)
        XCTAssertEqual(decoded.broadcast?.request(at: 0).priority, .immediate)
        XCTAssertFalse(decoded.carries(.apns), "no device of the instance is sent to")
        guard case .broadcast = decoded.mode else { return XCTFail("\(decoded.mode)") }
        XCTAssertFalse(decoded.isShardable, "its targets are channels")
        XCTAssertEqual(JSONValue.parse(plan.encoded())?.objectValue?["v"], .int(6), "version 6: the hms part")

        let v3 = Data(#"{"v":3,"platforms":["apns"],"apnsPayload":"{\"aps\":{}}","requestBody":{}}"#.utf8)
        XCTAssertNil(try PublishPlan(decoding: v3).broadcast)
        let damaged = Data(
            #"{"v":4,"platforms":["apns"],"requestBody":{},"broadcast":{"channels":["not base64!"],"payload":"{}","priority":5,"expiration":0}}"#
                .utf8)
        XCTAssertThrowsError(try PublishPlan(decoding: damaged))
    }

    func testStatusShowsEachChannelsOutcomeFromTheCounters() throws {
        let other = APNsChannelID("dW5rbm93bi1jaGFubmVsIQ==")!
        var counters: PublishCounters = [.targets: 2]
        counters.add(BroadcastFeeder.counters(APNsChannelID(channel)!, failed: nil, attempts: 3))
        counters.add(BroadcastFeeder.counters(other, failed: "ChannelNotRegistered", attempts: 1))
        XCTAssertEqual(
            BroadcastStatus.render(counters),
            .object([
                "accepted": .int(1), "failed": .int(1), "failedByReason": .object(["ChannelNotRegistered": .int(1)]),
                "channels": .object([
                    channel: .object(["status": "accepted", "attempts": .int(3)]),
                    other.rawValue: .object(["status": "failed", "reason": "ChannelNotRegistered", "attempts": .int(1)]
                    ),
                ]),
            ]))
    }

    func testBroadcastConfigIsReadWithFieldPreciseErrors() throws {
        func load(_ broadcast: String) throws(ConfigError) -> ServerConfig {
            let json =
                #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","apns":{"topic":"com.example.app","defaultEnvironment":"sandbox","broadcast":\#(broadcast)}}]}"#
            return try ServerConfig.parse(Data(json.utf8), environment: [:]).0
        }
        let config = try load(
            #"{"environment":"production","managementUrl":"https://m.example:2196","sendUrl":"https://s.example","maxChannelsPerPublish":7}"#
        )
        let broadcast = try XCTUnwrap(config.instances[0].apns?.broadcast)
        XCTAssertEqual(broadcast.environment, .production)
        XCTAssertEqual(broadcast.managementURL, "https://m.example:2196")
        XCTAssertEqual(broadcast.sendURL, "https://s.example")
        XCTAssertEqual(broadcast.maxChannelsPerPublish, 7)
        let runtime = InstanceRuntime(config: config.instances[0], credentials: nil)
        XCTAssertEqual(runtime.broadcastEndpoints?.sendURL, "https://s.example")
        XCTAssertEqual(runtime.maxChannelsPerPublish, 7)

        let defaults = InstanceRuntime(config: try load("{}").instances[0], credentials: nil)
        XCTAssertEqual(defaults.broadcastEndpoints, APNsBroadcastEndpoints.sandbox, "the instance's defaultEnvironment")
        XCTAssertEqual(defaults.maxChannelsPerPublish, 100)

        XCTAssertThrowsError(
            try load(#"{"environment":"staging","sendUrl":"http://s","maxChannelsPerPublish":0,"x":1}"#)
        ) { error in
            let messages = Set((error as? ConfigError)?.errorDescriptions ?? [])
            XCTAssertTrue(
                messages.contains(
                    "instances[0].apns.broadcast.environment: must be \"sandbox\" or \"production\", got \"staging\""),
                "\(messages)")
            XCTAssertTrue(
                messages.contains { $0.hasPrefix("instances[0].apns.broadcast.sendUrl: must be an https URL") },
                "\(messages)")
            XCTAssertTrue(
                messages.contains { $0.hasPrefix("instances[0].apns.broadcast.maxChannelsPerPublish:") }, "\(messages)")
            XCTAssertTrue(
                messages.contains { $0.hasPrefix("instances[0].apns.broadcast") && $0.contains("x") }, "\(messages)")
        }
    }
}
