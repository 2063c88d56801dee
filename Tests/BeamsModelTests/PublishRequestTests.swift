import BeamsModel
import JSON
import PushStore
import XCTest

final class PublishRequestTests: XCTestCase {
    private func parse(_ json: String, _ kind: PublishRequest.Audience = .interests) throws(BeamsError)
        -> PublishRequest
    {
        try PublishRequest.parse(Array(json.utf8), kind: kind)
    }

    private func assertRejects(
        _ json: String, _ kind: PublishRequest.Audience = .interests, status: Int = 422,
        description: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            _ = try parse(json, kind)
            XCTFail("accepted \(json)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.statusCode, status, file: file, line: line)
            XCTAssertEqual(error.detail, description, file: file, line: line)
        }
    }

    func testAcceptsInterestPublishAndDeduplicatesInterests() throws {
        let request = try parse(#"{"interests":["a","b","a"],"apns":{"aps":{"alert":"hi"}},"fcm":{}}"#)
        XCTAssertEqual(request.targets, ["a", "b"])
        XCTAssertEqual(request.platforms, ["apns", "fcm"])
        XCTAssertEqual(request.apns?.aps["alert"], .string("hi"))
    }

    func testRejectsMissingInterestsWithBeamsWording() {
        assertRejects(#"{"apns":{}}"#, description: "`interests`: interests is required")
        assertRejects(#"{"apns":{}}"#, .users, description: "`users`: users is required")
    }

    func testRejectsBodyThatIsNotAJSONObject() {
        assertRejects("[1]", status: 400, description: "Failed to read body as a JSON object")
        assertRejects("{nope", status: 400, description: "Failed to read body as a JSON object")
    }

    func testRejectsInterestCountOutsideOneToHundred() {
        assertRejects(#"{"interests":[],"apns":{}}"#, description: "`interests`: Array must have at least 1 items")
        let many = (0...100).map { "\"i\($0)\"" }.joined(separator: ",")
        assertRejects(
            #"{"interests":[\#(many)],"apns":{}}"#, description: "`interests`: Array must have at most 100 items")
    }

    func testRejectsInterestNamesOutsideThePattern() {
        assertRejects(
            #"{"interests":["ok","no spaces"],"apns":{}}"#,
            description: "`interests.1`: Does not match pattern '^[a-zA-Z0-9_\\-=@,.;]+$'")
        let long = String(repeating: "a", count: 165)
        assertRejects(
            #"{"interests":["\#(long)"],"apns":{}}"#,
            description: "`interests.0`: String length must be less than or equal to 164")
        XCTAssertNoThrow(try parse(#"{"interests":["a-b_c=d@e,f.g;h"],"apns":{}}"#))
    }

    func testRejectsDuplicateAndOversizedUsers() {
        assertRejects(#"{"users":["u","u"],"apns":{}}"#, .users, description: "`users`: array items must be unique")
        let long = String(repeating: "é", count: 83)  // 166 bytes, 83 characters
        assertRejects(
            #"{"users":["\#(long)"],"apns":{}}"#, .users,
            description: "`users.0`: User ids must be no more than 164 bytes")
        let many = (0...1000).map { "\"u\($0)\"" }.joined(separator: ",")
        assertRejects(
            #"{"users":[\#(many)],"apns":{}}"#, .users, description: "`users`: Array must have at most 1000 items")
    }

    func testRequiresAtLeastOnePlatform() {
        assertRejects(#"{"interests":["a"]}"#, description: "`(root)`: at least one of apns, fcm or web is required")
        assertRejects(
            #"{"interests":["a"],"apns":"x"}"#, description: "`apns`: Invalid type. Expected: object, given: string")
    }

    func testValidatesAPNsHeaderFields() {
        assertRejects(
            #"{"interests":["a"],"apns":{"priority":7}}"#,
            description: "`apns.priority`: apns.priority must be one of the following: 1, 5, 10")
        let collapse = String(repeating: "c", count: 65)
        assertRejects(
            #"{"interests":["a"],"apns":{"collapse_id":"\#(collapse)"}}"#,
            description: "`apns.collapse_id`: String length must be less than or equal to 64 bytes")
        assertRejects(
            #"{"interests":["a"],"apns":{"push_type":"loud"}}"#,
            description:
                "`apns.push_type`: must be one of the following: alert, background, complication, controls, fileprovider, liveactivity, location, mdm, pushtotalk, voip, widgets"
        )
        assertRejects(
            #"{"interests":["a"],"webhookUrl":"ftp://x","apns":{}}"#,
            description: "`webhookUrl`: Only http and https webhook URLs are supported")
    }

    func testWebhookURLMustBeAnHTTPURLCurlAccepts() throws {
        for url in [
            "http://hooks.example.com/beams", "https://user:pw@hooks.example.com:8443/x?y=1", "http://127.0.0.1:9/",
        ] {
            XCTAssertEqual(try parse(#"{"interests":["a"],"webhookUrl":"\#(url)","apns":{}}"#).webhookURL, url)
        }
        for url in ["file:///etc/passwd", "gopher://127.0.0.1:6379/_FLUSHALL", "dict://x:11211/stat", "ldap://x/"] {
            assertRejects(
                #"{"interests":["a"],"webhookUrl":"\#(url)","apns":{}}"#,
                description: "`webhookUrl`: Only http and https webhook URLs are supported")
        }
        for url in [
            "hooks.example.com/beams", "http://", "http://exa mple.com/", "http://h:99999/", "http://[::1/",
            "http://a\\r\\nX: y/", "http://h/" + String(repeating: "a", count: 9000),
        ] {
            assertRejects(
                #"{"interests":["a"],"webhookUrl":"\#(url)","apns":{}}"#,
                description: "`webhookUrl`: Does not match format 'uri'")
        }
        assertRejects(
            #"{"interests":["a"],"webhookUrl":5,"apns":{}}"#,
            description: "`webhookUrl`: Invalid type. Expected: string, given: integer")
    }

    func testPayloadInjectsPusherIdsAndContentAvailable() throws {
        let request = try parse(
            #"{"interests":["a"],"apns":{"aps":{"alert":{"title":"T","body":"B"},"badge":1},"data":{"k":true,"n":1.5},"custom":"x","priority":5}}"#
        )
        let payload = try XCTUnwrap(request.apns).payload(instanceID: "inst", publishID: "pubid-1")
        let decoded = try XCTUnwrap(JSONValue.parse(payload))
        XCTAssertEqual(decoded["aps"]?["content-available"], .int(1))
        XCTAssertEqual(decoded["aps"]?["badge"], .int(1))
        XCTAssertEqual(decoded["data"]?["k"], .bool(true), "booleans must stay booleans, not become 1")
        XCTAssertEqual(decoded["data"]?["n"], .double(1.5))
        XCTAssertEqual(
            decoded["data"]?["pusher"], .object(["instanceId": .string("inst"), "publishId": .string("pubid-1")]))
        XCTAssertEqual(decoded["custom"], .string("x"))
        XCTAssertNil(decoded["priority"], "header fields are not payload keys")
        XCTAssertEqual(request.apns?.priority, 5)
    }

    func testDisableDeliveryTrackingLeavesApsUntouched() throws {
        let request = try parse(
            #"{"interests":["a"],"apns":{"aps":{"alert":"x"},"pusher":{"disable_delivery_tracking":true}}}"#)
        let decoded = try XCTUnwrap(
            JSONValue.parse(try XCTUnwrap(request.apns).payload(instanceID: "i", publishID: "p")))
        XCTAssertNil(decoded["aps"]?["content-available"])
        XCTAssertNil(decoded["pusher"])
    }
}
