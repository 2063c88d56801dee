import FCMClient
import JSON
import XCTest

final class FCMMessageTemplateTests: XCTestCase {
    private func template(_ section: JSONValue) throws(FCMPayloadError) -> FCMMessageTemplate {
        try FCMMessageTemplate(section: section, instanceID: "instance-1", publishID: "pubid-42")
    }

    private func body(_ section: JSONValue, token: String = "tok-1") throws -> JSONValue {
        try JSONValue(parsing: try template(section).body(token: token))
    }

    private func pusher(displayable: Bool, data: Bool) -> JSONValue {
        .string(
            #"{"instanceId":"instance-1","publishId":"pubid-42","hasDisplayableContent":\#(displayable),"hasData":\#(data)}"#
        )
    }

    func testMapsNotificationDataAndAndroidOptionsToV1() throws {
        let section: JSONValue = [
            "notification": [
                "title": "Hi", "body": "There", "image": "https://example.com/i.png",
                "icon": "ic_stat", "sound": "default", "tag": "t", "color": "#00FFaa", "click_action": "OPEN",
                "android_channel_id": "news", "body_loc_key": "bk", "body_loc_args": ["a", "b"],
                "title_loc_key": "tk", "title_loc_args": [],
            ],
            "data": ["k": "v"],
            "time_to_live": 3600, "priority": "high", "collapse_key": "c", "restricted_package_name": "com.example",
            "content_available": true, "mutable_content": false,
        ]
        XCTAssertEqual(
            try body(section),
            [
                "message": [
                    "token": "tok-1",
                    "notification": ["title": "Hi", "body": "There", "image": "https://example.com/i.png"],
                    "data": ["k": "v", "pusher": pusher(displayable: true, data: true)],
                    "android": [
                        "ttl": "3600s", "priority": "HIGH", "collapse_key": "c",
                        "restricted_package_name": "com.example",
                        "notification": [
                            "icon": "ic_stat", "sound": "default", "tag": "t", "color": "#00FFaa",
                            "click_action": "OPEN",
                            "channel_id": "news", "body_loc_key": "bk", "body_loc_args": ["a", "b"],
                            "title_loc_key": "tk",
                            "title_loc_args": [],
                        ],
                    ],
                ]
            ])
    }

    func testDataValuesAreStringifiedAsJSONText() throws {
        let section: JSONValue = [
            "data": [
                "s": "text", "i": 3, "f": 1.5, "t": true, "one": 1, "n": nil, "o": ["a": 1, "b": [true]],
                "a": [1, "x"],
            ]
        ]
        let data = try body(section)["message"]?["data"]
        XCTAssertEqual(
            data,
            [
                "s": "text", "i": "3", "f": "1.5", "t": "true", "one": "1", "n": "null",
                "o": #"{"a":1,"b":[true]}"#, "a": #"[1,"x"]"#, "pusher": pusher(displayable: false, data: true),
            ])
        // The app gets back what was published.
        XCTAssertEqual(try JSONValue(parsing: Array((data?["o"]?.stringValue ?? "").utf8)), ["a": 1, "b": [true]])
    }

    func testDataOnlyAndEmptySectionsStillCarryPusherMetadata() throws {
        XCTAssertEqual(
            try body([:]), ["message": ["token": "tok-1", "data": ["pusher": pusher(displayable: false, data: false)]]])
        XCTAssertEqual(try body(["priority": "normal"])["message"]?["android"], ["priority": "NORMAL"])
        XCTAssertEqual(try body(["time_to_live": 0])["message"]?["android"], ["ttl": "0s"])
        XCTAssertEqual(try body(["time_to_live": 2_419_200])["message"]?["android"], ["ttl": "2419200s"])
    }

    func testDryRunBecomesValidateOnly() throws {
        XCTAssertEqual(try body(["dry_run": true])["validate_only"], true)
        XCTAssertNil(try body(["dry_run": false])["validate_only"])
    }

    func testTokenIsEscapedAndCannotChangeTheMessage() throws {
        let hostile = #"x","topic":"all"}, "validate_only":false, "y":{"z":"\#u{0}"#
        let parsed = try body(["notification": ["title": "t"]], token: hostile)
        XCTAssertEqual(parsed["message"]?["token"], .string(hostile))
        XCTAssertNil(parsed["message"]?["topic"])
        XCTAssertEqual(parsed.objectValue?.count, 1)
    }

    func testSameTemplateServesManyDevices() throws {
        let built = try template(["notification": ["title": "t"], "dry_run": true])
        for token in ["a", "b", ""] {
            let parsed = try JSONValue(parsing: built.body(token: token))
            XCTAssertEqual(parsed["message"]?["token"], .string(token))
            XCTAssertEqual(parsed["validate_only"], true)
        }
    }

    func testRejectsTargetsAndUnknownFields() {
        for field in [
            "to", "registration_ids", "condition", "topic", "token", "android", "apns", "webpush", "fcm_options",
        ] {
            XCTAssertThrowsError(try template([field: "x"]), equals: FCMPayloadError.unknownField(path: "fcm.\(field)"))
        }
        XCTAssertThrowsError(
            try template(["notification": ["subtitle": "x"]]),
            equals: FCMPayloadError.unknownField(path: "fcm.notification.subtitle"))
    }

    func testRejectsWrongTypesAndValues() {
        let cases: [(JSONValue, FCMPayloadError)] = [
            ("text", .notAnObject(path: "fcm")),
            (["notification": "hi"], .notAnObject(path: "fcm.notification")),
            (["data": ["a", "b"]], .notAnObject(path: "fcm.data")),
            (["notification": ["title": 1]], .wrongType(path: "fcm.notification.title", expected: "a string")),
            (["notification": ["icon": nil]], .wrongType(path: "fcm.notification.icon", expected: "a string")),
            (
                ["notification": ["body_loc_args": "a"]],
                .wrongType(path: "fcm.notification.body_loc_args", expected: "an array of strings")
            ),
            (
                ["notification": ["title_loc_args": [1]]],
                .wrongType(path: "fcm.notification.title_loc_args", expected: "an array of strings")
            ),
            (
                ["notification": ["color": "red"]],
                .invalidValue(path: "fcm.notification.color", reason: "must be #rrggbb")
            ),
            (
                ["notification": ["color": "#12345g"]],
                .invalidValue(path: "fcm.notification.color", reason: "must be #rrggbb")
            ),
            (["time_to_live": -1], .invalidValue(path: "fcm.time_to_live", reason: "must be between 0 and 2419200")),
            (
                ["time_to_live": 2_419_201],
                .invalidValue(path: "fcm.time_to_live", reason: "must be between 0 and 2419200")
            ),
            (["time_to_live": 1.5], .wrongType(path: "fcm.time_to_live", expected: "a whole number of seconds")),
            (["time_to_live": "60"], .wrongType(path: "fcm.time_to_live", expected: "a whole number of seconds")),
            (["time_to_live": 1e300], .wrongType(path: "fcm.time_to_live", expected: "a whole number of seconds")),
            (["priority": "urgent"], .invalidValue(path: "fcm.priority", reason: "must be \"normal\" or \"high\"")),
            (["priority": "HIGH"], .invalidValue(path: "fcm.priority", reason: "must be \"normal\" or \"high\"")),
            (["priority": 10], .wrongType(path: "fcm.priority", expected: "a string")),
            (["collapse_key": 1], .wrongType(path: "fcm.collapse_key", expected: "a string")),
            (["dry_run": 1], .wrongType(path: "fcm.dry_run", expected: "true or false")),
            (["content_available": 1], .wrongType(path: "fcm.content_available", expected: "true or false")),
        ]
        for (section, expected) in cases {
            XCTAssertThrowsError(try template(section), equals: expected, "\(section)")
        }
    }

    func testRejectsReservedDataKeys() {
        for key in ["from", "message_type", "google.sent_time", "Google", "gcm.notification.x", "pusher", ""] {
            XCTAssertThrowsError(try template(["data": [key: "x"]]), equals: FCMPayloadError.reservedDataKey(key), key)
        }
        // Only the reserved spellings: similar keys pass.
        let allowed = try? template(["data": ["Pusher": "x", "fromage": "y", "googly": "z", "xgcm": "w"]])
        XCTAssertEqual(allowed?.message["data"]?.objectValue?.count, 5)
    }

    func testEnforcesFCMsSizeLimitWithoutTheToken() throws {
        // Find the largest data value that fits, then one byte more must fail.
        let overhead = try template(["data": ["k": ""]]).messageBytes.count
        let fits = FCMMessageTemplate.maxMessageBytes - overhead
        let built = try template(["data": ["k": .string(String(repeating: "x", count: fits))]])
        XCTAssertEqual(built.messageBytes.count, FCMMessageTemplate.maxMessageBytes)
        XCTAssertThrowsError(
            try template(["data": ["k": .string(String(repeating: "x", count: fits + 1))]]),
            equals: FCMPayloadError.tooLarge(bytes: 4097, limit: 4096))
        // A long device token does not count against the message limit.
        XCTAssertGreaterThan(built.body(token: String(repeating: "t", count: 300)).count, 4096 + 300)
    }

    func testEscapedCharactersCountAtTheirEncodedSize() throws {
        // 2000 quotes serialize as 4000 bytes: over the limit with the rest of the message.
        XCTAssertThrowsError(try template(["data": ["k": .string(String(repeating: "\"", count: 2100))]]))
        XCTAssertNoThrow(try template(["data": ["k": .string(String(repeating: "é", count: 1900))]]))
    }
}
