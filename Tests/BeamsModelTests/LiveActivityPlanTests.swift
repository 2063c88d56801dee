import APNsClient
import BeamsModel
import Foundation
import JSON
import PushStore
import XCTest

/// A Live Activity publish as the engine sees it: the stored plan (payload, push type, priority, which rows). What
/// an APNs answer does to a Live Activity token is in PushServerTests' LiveActivityOutcomeTests.
final class LiveActivityPlanTests: XCTestCase {
    private func plan(_ body: String) throws -> PublishPlan {
        let request = try PublishRequest.parse(Array(body.utf8), kind: .users)
        let payload = try XCTUnwrap(
            try request.liveActivity(delivery: nil, now: Date(timeIntervalSince1970: 1_790_000_000.7)))
        var plan = try PublishPlan(request: request, body: Array(body.utf8), instanceID: "inst-1", publishID: "pub-1")
        plan.useLiveActivity(payload)
        return plan
    }

    func testPlanRoundTripsAndCarriesTheActivityPayloadOnly() throws {
        let original = try plan(
            #"""
            {"users":["u"],"x_live_activity":{"attributesType":"Match","activityId":"A1","priority":10},
             "apns":{"aps":{"event":"end","content-state":{"s":2},"dismissal-date":0},"data":{"k":"v"},"custom":1}}
            """#)
        let decoded = try PublishPlan(decoding: original.encoded())
        XCTAssertEqual(decoded, original)
        XCTAssertEqual(decoded.pushType, "liveactivity")
        guard case .liveActivity = decoded.mode else { return XCTFail("\(decoded.mode)") }
        XCTAssertFalse(decoded.isShardable, "its targets are token rows, not the device ranges shards cover")
        XCTAssertEqual(decoded.priority, 10)
        XCTAssertEqual(
            decoded.liveActivitySelector, LiveActivitySelector(kind: .update, attributesType: "Match", activityID: "A1")
        )
        let payload = try XCTUnwrap(decoded.apnsPayload.flatMap { JSONValue.parse($0)?.objectValue })
        XCTAssertEqual(payload["aps"]?["timestamp"], .int(1_790_000_000), "whole seconds at intake")
        XCTAssertNil(payload["aps"]?["content-available"])
        XCTAssertEqual(payload["data"], .object(["k": "v"]), "the publisher's data, without Beams' pusher ids")
        XCTAssertEqual(payload["custom"], .int(1))
        let template = RequestTemplate(
            plan: decoded, payload: decoded.apnsPayload ?? [], topic: "com.example.app.push-type.liveactivity")
        XCTAssertEqual(template.pushType, .liveactivity)
        XCTAssertEqual(template.priority?.rawValue, 10)
    }

    func testStartTargetsPushToStartTokens() throws {
        let start = try plan(
            #"""
            {"users":["u"],"x_live_activity":{"attributesType":"Match"},
             "apns":{"aps":{"event":"start","attributes-type":"Match","attributes":{},"content-state":{},"alert":"x"}}}
            """#)
        XCTAssertEqual(start.liveActivitySelector, LiveActivitySelector(kind: .start, attributesType: "Match"))
        XCTAssertEqual(start.priority, 5)
        XCTAssertEqual(RequestTemplate(plan: start, payload: start.apnsPayload ?? [], topic: "t").priority?.rawValue, 5)
    }

    func testVersionThreePlanWithoutLiveActivityStillLoads() throws {
        let stored = Data(#"{"v":3,"platforms":["apns"],"apnsPayload":"{\"aps\":{}}","requestBody":{}}"#.utf8)
        let decoded = try PublishPlan(decoding: stored)
        XCTAssertNil(decoded.liveActivity)
        XCTAssertNil(decoded.liveActivitySelector)
        XCTAssertEqual(decoded.mode, .devices)
        XCTAssertTrue(decoded.isShardable)
        XCTAssertThrowsError(
            try PublishPlan(decoding: Data(#"{"v":4,"liveActivity":{"event":"pause"},"apnsPayload":"{}"}"#.utf8)))
    }

    func testLiveActivityPublishesCarryOnlyAPNsAndNoLocalTime() throws {
        let body =
            #"{"users":["u"],"x_live_activity":{"attributesType":"M"},"apns":{"aps":{"event":"end"}},"web":{"data":{}}}"#
        let request = try PublishRequest.parse(Array(body.utf8), kind: .users)
        XCTAssertThrowsError(try request.liveActivity(delivery: nil, now: Date())) { error in
            XCTAssertEqual((error as? BeamsError)?.detail, "`web`: A Live Activity publish carries only apns")
        }
        var local = DeliveryOptions()
        local.localTime = LocalTime("09:00")
        let plain = try PublishRequest.parse(
            Array(#"{"users":["u"],"x_live_activity":{"attributesType":"M"},"apns":{"aps":{"event":"end"}}}"#.utf8),
            kind: .users)
        XCTAssertThrowsError(try plain.liveActivity(delivery: local, now: Date()))
    }
}
