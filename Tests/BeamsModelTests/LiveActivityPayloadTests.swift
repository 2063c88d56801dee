import BeamsModel
import JSON
import PushStore
import XCTest

final class LiveActivityPayloadTests: XCTestCase {
    private let now = 1_790_000_000

    private func parse(_ member: String, _ apns: String) throws(BeamsError) -> LiveActivityPayload {
        let body = #"{"interests":["a"],"x_live_activity":\#(member),"apns":\#(apns)}"#
        let request = try PublishRequest.parse(Array(body.utf8), kind: .interests)
        guard let value = JSONValue.parse(Array(member.utf8)) else { throw .invalidJSON }
        return try LiveActivityPayload.parse(member: value, apns: request.apns, timestamp: now)
    }

    private func assertRejects(
        _ member: String, _ apns: String, path: String, contains text: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            _ = try parse(member, apns)
            XCTFail("accepted \(member) \(apns)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.statusCode, 422, file: file, line: line)
            XCTAssertTrue(error.detail.hasPrefix("`\(path)`: "), error.detail, file: file, line: line)
            XCTAssertTrue(error.detail.contains(text), error.detail, file: file, line: line)
        }
    }

    private let start =
        #"{"aps":{"event":"start","attributes-type":"Match","attributes":{"id":"m1"},"content-state":{"s":0},"alert":{"title":"Kick-off"}}}"#

    func testAcceptsStartAndStampsTimestampWithDefaultPriorityFive() throws {
        let payload = try parse(#"{"attributesType":"Match"}"#, start)
        XCTAssertEqual(payload.event, .start)
        XCTAssertEqual(payload.priority, 5)
        XCTAssertNil(payload.activityID)
        XCTAssertEqual(payload.aps["timestamp"], .int(now))
        let body = JSONValue.parse(payload.payload())
        XCTAssertEqual(body?["aps"]?["timestamp"], .int(now))
        XCTAssertNil(body?["data"], "never Beams' data.pusher")
        XCTAssertNil(body?["aps"]?["content-available"])
        XCTAssertEqual(LiveActivityPayload.topic(bundleID: "com.example.app"), "com.example.app.push-type.liveactivity")
    }

    func testAcceptsUpdateForOneActivityAtPriorityTen() throws {
        let payload = try parse(
            #"{"attributesType":"Match","activityId":"A-1","priority":10}"#,
            #"{"aps":{"event":"update","content-state":{"s":1},"stale-date":1790003600,"relevance-score":0.5}}"#)
        XCTAssertEqual(payload.event, .update)
        XCTAssertEqual(payload.activityID, "A-1")
        XCTAssertEqual(payload.priority, 10)
    }

    func testAcceptsEndWithDismissalDateAndWithoutContentState() throws {
        let payload = try parse(#"{"attributesType":"Match"}"#, #"{"aps":{"event":"end","dismissal-date":0}}"#)
        XCTAssertEqual(payload.event, .end)
    }

    func testRejectsClientSetTimestamp() {
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"event":"update","content-state":{},"timestamp":5}}"#,
            path: "apns.aps.timestamp", contains: "server sets timestamp")
    }

    func testRejectsAttributesTypeMismatchOnStart() {
        assertRejects(#"{"attributesType":"Other"}"#, start, path: "apns.aps.attributes-type", contains: "Must equal")
    }

    func testRejectsMissingOrUnknownEvent() {
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"content-state":{}}}"#, path: "apns.aps.event",
            contains: "required")
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"event":"pause","content-state":{}}}"#,
            path: "apns.aps.event", contains: "start, update, end")
    }

    func testRejectsStartWithoutAttributesOrAlert() {
        assertRejects(
            #"{"attributesType":"Match"}"#,
            #"{"aps":{"event":"start","attributes-type":"Match","content-state":{},"alert":"x"}}"#,
            path: "apns.aps.attributes", contains: "required")
        assertRejects(
            #"{"attributesType":"Match"}"#,
            #"{"aps":{"event":"start","attributes-type":"Match","attributes":{},"content-state":{}}}"#,
            path: "apns.aps.alert", contains: "required")
        assertRejects(
            #"{"attributesType":"Match"}"#,
            #"{"aps":{"event":"start","attributes":{},"content-state":{},"alert":"x"}}"#,
            path: "apns.aps.attributes-type", contains: "required")
    }

    func testRejectsContentStateThatIsNotAnObject() {
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"event":"update","content-state":[1]}}"#,
            path: "apns.aps.content-state", contains: "Expected: object")
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"event":"update"}}"#,
            path: "apns.aps.content-state", contains: "required for event update")
    }

    func testRejectsDismissalDateOutsideEnd() {
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"event":"update","content-state":{},"dismissal-date":1}}"#,
            path: "apns.aps.dismissal-date", contains: "only to event end")
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"event":"end","dismissal-date":-1}}"#,
            path: "apns.aps.dismissal-date", contains: "0 or more")
    }

    func testRejectsStartOnlyKeysInUpdates() {
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"event":"update","content-state":{},"attributes":{}}}"#,
            path: "apns.aps.attributes", contains: "only to event start")
        assertRejects(
            #"{"attributesType":"Match","activityId":"a"}"#, start,
            path: "x_live_activity.activityId", contains: "applies to update and end")
    }

    func testRejectsOrdinaryNotificationKeys() {
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"event":"update","content-state":{},"content-available":1}}"#,
            path: "apns.aps.content-available", contains: "Not a Live Activity key")
    }

    func testRejectsBadMemberFields() {
        assertRejects(#"{"attributesType":"9Bad"}"#, start, path: "x_live_activity.attributesType", contains: "letters")
        assertRejects(#"{}"#, start, path: "x_live_activity.attributesType", contains: "required")
        assertRejects(
            #"{"attributesType":"Match","priority":1}"#, start, path: "x_live_activity.priority", contains: "5, 10")
        assertRejects(
            #"{"attributesType":"Match","activityId":"has space"}"#,
            #"{"aps":{"event":"end"}}"#, path: "x_live_activity.activityId", contains: "printable")
        assertRejects(
            #"{"attributesType":"Match","extra":1}"#, start, path: "x_live_activity.extra", contains: "Unknown member")
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"priority":10,"aps":{"event":"end"}}"#,
            path: "apns.priority", contains: "x_live_activity.priority")
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"push_type":"alert","aps":{"event":"end"}}"#,
            path: "apns.push_type", contains: "liveactivity")
    }

    func testRejectsPayloadOverFourKilobytes() {
        let big = String(repeating: "x", count: 4100)
        assertRejects(
            #"{"attributesType":"Match"}"#, #"{"aps":{"event":"update","content-state":{"t":"\#(big)"}}}"#,
            path: "apns", contains: "at most 4096")
    }

    func testBroadcastCallersRestrictEvents() {
        XCTAssertThrowsError(
            try LiveActivityPayload.validateAPS(
                ["event": "start", "attributes-type": "M", "attributes": [:], "content-state": [:], "alert": "x"],
                attributesType: nil, events: [.update, .end])
        ) { error in
            XCTAssertEqual(
                (error as? BeamsError)?.detail, "`apns.aps.event`: event must be one of the following: update, end")
        }
        XCTAssertEqual(
            try LiveActivityPayload.validateAPS(["event": "end"], attributesType: nil, events: [.update, .end]), .end)
    }

    func testAttributesTypeNamesFollowSwiftIdentifiers() {
        XCTAssertTrue(LiveActivityToken.isValidAttributesType("MyApp.MatchAttributes_2"))
        XCTAssertFalse(LiveActivityToken.isValidAttributesType(""))
        XCTAssertFalse(LiveActivityToken.isValidAttributesType(".Match"))
        XCTAssertFalse(LiveActivityToken.isValidAttributesType("Match-1"))
        XCTAssertFalse(LiveActivityToken.isValidAttributesType(String(repeating: "a", count: 129)))
        XCTAssertFalse(LiveActivityToken.isValidAttributesType("Mätch"))
    }
}
