import BeamsModel
import FCMClient
import Foundation
import JSON
import PushStore
import XCTest

/// The stored plan for the three platforms: built and validated at intake, read back by the engine.
final class PublishPlanTests: XCTestCase {
    private func plan(_ body: String) throws -> PublishPlan {
        let request = try PublishRequest.parse(Array(body.utf8), kind: .interests)
        return try PublishPlan(request: request, body: Array(body.utf8), instanceID: "inst-1", publishID: "pub-1")
    }

    private func assertRefused(
        _ body: String, status: Int = 422, path: String, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        XCTAssertThrowsError(try plan(body), file: file, line: line) { error in
            guard let beams = error as? BeamsError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(beams.statusCode, status, file: file, line: line)
            XCTAssertTrue(beams.detail.contains("`\(path)`"), beams.detail, file: file, line: line)
        }
    }

    func testPlanWithAllThreePlatformsRoundTripsThroughTheStoreFormat() throws {
        let original = try plan(
            #"""
            {"interests":["a"],"apns":{"aps":{"alert":"x"}},
             "fcm":{"notification":{"title":"t","body":"b","sound":"ping"},"data":{"n":3},"time_to_live":60,"dry_run":true},
             "web":{"notification":{"title":"t","deep_link":"https://example.com/x"},"data":{"k":"v"},"time_to_live":30}}
            """#)
        let decoded = try PublishPlan(decoding: original.encoded())
        XCTAssertEqual(decoded, original)
        XCTAssertEqual(decoded.fcm?.body(token: "tok"), original.fcm?.body(token: "tok"))
        XCTAssertEqual(decoded.fcm?.validateOnly, true)
        XCTAssertEqual(decoded.webTimeToLive, 30)
        XCTAssertTrue(decoded.carries(.apns) && decoded.carries(.fcm) && decoded.carries(.web))
    }

    func testOnlyAPublishToDevicesSentAtOnceIsShardable() throws {
        var devices = try plan(#"{"interests":["a"],"apns":{"aps":{"alert":"x"}}}"#)
        XCTAssertEqual(devices.mode, .devices)
        XCTAssertTrue(devices.isShardable)
        devices.delivery = DeliveryOptions()
        devices.delivery?.sendAt = Date(timeIntervalSince1970: 1_800_000_000)
        XCTAssertTrue(devices.isShardable, "a scheduled publish is split when it starts")
        devices.delivery?.throttlePerMinute = 60
        XCTAssertFalse(devices.isShardable, "a paced publish is delivered whole: each shard's run would keep the pace")
        devices.delivery?.throttlePerMinute = nil
        devices.delivery?.localTime = LocalTime("09:00")
        XCTAssertFalse(devices.isShardable, "a local-time publish goes out in rounds, delivered whole")
    }

    func testWebPayloadHasTheShapeTheBeamsServiceWorkerReads() throws {
        let built = try plan(
            #"{"interests":["a"],"web":{"notification":{"title":"Hi","body":"there","icon":"https://e.x/i.png","hide_notification_if_site_has_focus":true},"data":{"k":[1,2]}}}"#
        )
        let payload = try XCTUnwrap(built.webPayload.flatMap { JSONValue.parse($0)?.objectValue })
        XCTAssertEqual(
            payload["notification"],
            .object([
                "title": "Hi", "body": "there", "icon": "https://e.x/i.png",
                "hide_notification_if_site_has_focus": .bool(true),
            ]))
        let data = try XCTUnwrap(payload["data"]?.objectValue)
        XCTAssertEqual(data["k"], .array([.int(1), .int(2)]))
        XCTAssertEqual(
            data["pusher"],
            .object([
                "instanceId": "inst-1", "publishId": "pub-1", "hasDisplayableContent": .bool(true),
                "hasData": .bool(true),
            ]))
        XCTAssertEqual(built.webTimeToLive, WebTemplate.maxTimeToLive, "Beams' default TTL is four weeks")
    }

    func testDataOnlyWebPublishStillCarriesAnEmptyNotification() throws {
        let built = try plan(#"{"interests":["a"],"web":{"data":{"k":"v"}}}"#)
        let payload = try XCTUnwrap(built.webPayload.flatMap { JSONValue.parse($0)?.objectValue })
        XCTAssertEqual(payload["notification"], .object([:]))
        XCTAssertEqual(payload["data"]?.objectValue?["pusher"]?.objectValue?["hasDisplayableContent"], .bool(false))
    }

    func testVersionOnePlanWrittenBeforeFCMAndWebStillLoads() throws {
        let stored = Data(
            #"{"v":1,"platforms":["apns","fcm"],"apnsPayload":"{\"aps\":{}}","priority":5,"requestBody":{}}"#.utf8)
        let decoded = try PublishPlan(decoding: stored)
        XCTAssertEqual(decoded.apnsPayload, Array(#"{"aps":{}}"#.utf8))
        XCTAssertNil(decoded.fcm, "a v1 plan has no FCM message: its Android devices are not sent to, as before")
        XCTAssertFalse(decoded.carries(.web))
        XCTAssertThrowsError(try PublishPlan(decoding: Data(#"{"v":\#(PublishPlan.version + 1)}"#.utf8)))
        XCTAssertThrowsError(try PublishPlan(decoding: Data(#"{"v":2,"fcmMessage":"x"}"#.utf8)))
    }

    func testRefusesFCMSectionsFCMWouldRejectWith422NamingTheMember() {
        assertRefused(#"{"interests":["a"],"fcm":{"notification":{"colour":"red"}}}"#, path: "fcm.notification.colour")
        assertRefused(#"{"interests":["a"],"fcm":{"data":{"from":"x"}}}"#, path: "fcm.data")
        assertRefused(#"{"interests":["a"],"fcm":{"time_to_live":2419201}}"#, path: "fcm.time_to_live")
        assertRefused(#"{"interests":["a"],"fcm":{"to":"someone"}}"#, path: "fcm.to")
        let big = String(repeating: "x", count: 4100)
        assertRefused(#"{"interests":["a"],"fcm":{"data":{"k":"\#(big)"}}}"#, path: "fcm")
    }

    func testRefusesWebSectionsTheServiceWorkerCannotUse() {
        assertRefused(#"{"interests":["a"],"web":{"data":{"pusher":1}}}"#, path: "web.data")
        assertRefused(#"{"interests":["a"],"web":{"time_to_live":-1}}"#, path: "web.time_to_live")
        assertRefused(#"{"interests":["a"],"web":{"time_to_live":"60"}}"#, path: "web.time_to_live")
        assertRefused(#"{"interests":["a"],"web":{"notification":{"title":5}}}"#, path: "web.notification.title")
        assertRefused(#"{"interests":["a"],"web":{"urgency":"high"}}"#, path: "web.urgency")
        let big = String(repeating: "x", count: 4000)
        assertRefused(#"{"interests":["a"],"web":{"notification":{"body":"\#(big)"}}}"#, path: "web")
    }
}
