import ConfigModel
import Foundation
import JSON
import PushServer
import PushStore
import XCTest

/// The converters from other providers' exports (Parse `_Installation`, OneSignal's CSV, SNS endpoint listings) to
/// device lines, without a store: each mapping, each refusal with its reason and masked token, the `--map` rules,
/// and the sample files the end-to-end test imports (Tests/sdk/data), read through the readers and the device
/// file's own parser.
final class ProviderConverterTests: XCTestCase {
    static let data = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("sdk/data")
    let parser = DeviceLineParser(
        instance: InstanceConfig(id: "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11", secretKey: "s"),
        now: Date(millisecondsSince1970: 1_700_000_000_000))
    let hex = String(repeating: "ab", count: 32)

    private func object(_ text: String) -> [String: JSONValue] { JSONValue.parse(Array(text.utf8))!.objectValue! }

    private func line(
        _ result: (device: Result<JSONValue, DeviceLineParser.Refusal>, notes: [String]),
        file: StaticString = #filePath, line: UInt = #line
    ) -> [String: JSONValue] {
        switch result.device {
        case .success(let value): return value.objectValue!
        case .failure(let refusal): XCTFail("refused: \(refusal.reason)", file: file, line: line); return [:]
        }
    }

    private func refusal(
        _ result: (device: Result<JSONValue, DeviceLineParser.Refusal>, notes: [String]),
        file: StaticString = #filePath, line: UInt = #line
    ) -> DeviceLineParser.Refusal? {
        if case .failure(let refusal) = result.device { return refusal }
        XCTFail("accepted: \(result.device)", file: file, line: line)
        return nil
    }

    // MARK: Parse

    func testAParseRESTInstallationBecomesAnAPNsDeviceWithInterestsUserZoneTopicAndIds() {
        let converted = ParseInstallationConverter.convert(
            object(
                """
                {"objectId":"o1","installationId":"ABC-DEF","deviceType":"ios","deviceToken":"\(hex.uppercased())",
                 "channels":["news","","bad name!"],"timeZone":"Europe/Paris","appIdentifier":"com.example.app",
                 "user":{"__type":"Pointer","className":"_User","objectId":"alice"},"badge":2,
                 "createdAt":"2024-01-02T03:04:05.678Z","updatedAt":"2026-01-01T00:00:00.000Z"}
                """))
        let device = line(converted)
        XCTAssertEqual(device["platform"], .string("apns"))
        XCTAssertEqual(device["token"], .string(hex), "lower-cased")
        XCTAssertEqual(
            device["interests"], .array([.string("news")]), "the broadcast channel \"\" and a bad name dropped")
        XCTAssertEqual(converted.notes, ["channel names that are not interest names dropped"])
        XCTAssertEqual(device["userId"], .string("alice"))
        XCTAssertEqual(device["timeZone"], .string("Europe/Paris"))
        XCTAssertEqual(device["bundleId"], .string("com.example.app"))
        XCTAssertEqual(
            device["metadata"], .object(["parseObjectId": .string("o1"), "parseInstallationId": .string("abc-def")]))
        XCTAssertEqual(device["createdAt"], .string("2024-01-02T03:04:05.678Z"))
        XCTAssertEqual(device["lastRegisteredAt"], .string("2026-01-01T00:00:00.000Z"))
        XCTAssertNil(device["badge"], "badge is not a device field")
    }

    func testMongoexportsStorageFormGivesTheUserFromPUserAndDatesFromDollarDate() {
        let device = line(
            ParseInstallationConverter.convert(
                object(
                    """
                    {"_id":"m1","deviceType":"android","deviceToken":"tok:APA91b","_p_user":"_User$bob",
                     "_created_at":{"$date":"2025-01-01T00:00:00.000Z"}}
                    """)))
        XCTAssertEqual(device["platform"], .string("fcm"))
        XCTAssertEqual(device["token"], .string("tok:APA91b"), "FCM tokens verbatim")
        XCTAssertEqual(device["userId"], .string("bob"))
        XCTAssertEqual(device["metadata"], .object(["parseObjectId": .string("m1")]))
        XCTAssertEqual(device["createdAt"], .string("2025-01-01T00:00:00.000Z"))
    }

    func testParsePlatformsFollowPushTypeThenDeviceType() {
        for (types, platform) in [
            (#""deviceType":"osx""#, "apns"), (#""deviceType":"tvos""#, "apns"),
            (#""deviceType":"watchos""#, "apns"), (#""deviceType":"android","pushType":"fcm""#, "fcm"),
            (#""deviceType":"android","pushType":"gcm""#, "fcm"),
        ] {
            XCTAssertEqual(
                line(ParseInstallationConverter.convert(object("{\(types),\"deviceToken\":\"\(hex)\"}")))["platform"],
                .string(platform), types)
        }
    }

    func testAParseWebInstallationsSubscriptionStringBecomesTheSubscription() {
        let subscription =
            #"{\"endpoint\":\"https://fcm.googleapis.com/fcm/send/x\",\"expirationTime\":null,\"keys\":{\"auth\":\"a\",\"p256dh\":\"p\"}}"#
        let device = line(
            ParseInstallationConverter.convert(object("{\"deviceType\":\"web\",\"deviceToken\":\"\(subscription)\"}")))
        XCTAssertEqual(
            device["subscription"],
            .object([
                "endpoint": .string("https://fcm.googleapis.com/fcm/send/x"),
                "keys": .object(["auth": .string("a"), "p256dh": .string("p")]),
            ]))
        XCTAssertNil(device["token"])
    }

    func testParseRowsOfUnknownTypesExpoOrWithoutATokenAreRefusedWithAReason() {
        XCTAssertEqual(
            refusal(
                ParseInstallationConverter.convert(
                    object(#"{"deviceType":"winphone","deviceToken":"https://x/y-123456789"}"#)))?.reason,
            "deviceType winphone is not one push-server sends to")
        XCTAssertEqual(
            refusal(
                ParseInstallationConverter.convert(
                    object(#"{"deviceType":"winphone","deviceToken":"https://x/y-123456789"}"#)))?.maskedToken,
            "…456789", "the token masked, never whole")
        XCTAssertTrue(
            refusal(
                ParseInstallationConverter.convert(
                    object(#"{"deviceType":"android","pushType":"expo","deviceToken":"ExponentPushToken[x]"}"#)))?
                .reason.contains("Expo") == true)
        XCTAssertTrue(
            refusal(ParseInstallationConverter.convert(object(#"{"deviceType":"ios"}"#)))?.reason.contains(
                "no deviceToken") == true)
        XCTAssertTrue(
            refusal(ParseInstallationConverter.convert(object(#"{"deviceType":"web","deviceToken":"{}"}"#)))?
                .reason.contains("PushSubscription") == true)
    }

    func testAnOldStyleBracketedAPNsTokenIsNormalised() {
        let spaced =
            "<"
            + stride(from: 0, to: 64, by: 8).map { String(Array(hex.uppercased())[$0..<$0 + 8]) }.joined(separator: " ")
            + ">"
        XCTAssertEqual(
            line(ParseInstallationConverter.convert(object("{\"deviceType\":\"ios\",\"deviceToken\":\"\(spaced)\"}")))[
                "token"],
            .string(hex))
    }

    // MARK: OneSignal

    let header = [
        "id", "identifier", "timezone", "device_type", "tags", "invalid_identifier", "external_user_id",
        "web_auth", "web_p256",
    ]

    private func oneSignal(_ map: String? = nil) throws -> OneSignalConverter {
        try OneSignalConverter(
            header: header, options: try ProviderImportOptions.parse(map: map, snsPlatform: nil, for: .onesignal))
    }

    func testOneSignalDeviceTypesMapToPlatformsAndTheExternalIdToTheUser() throws {
        let converter = try oneSignal()
        let ios = line(converter.convert(["p1", hex.uppercased(), "3600", "0", "{}", "f", "carol", "", ""]))
        XCTAssertEqual(ios["platform"], .string("apns"))
        XCTAssertEqual(ios["token"], .string(hex))
        XCTAssertEqual(ios["userId"], .string("carol"))
        XCTAssertEqual(ios["metadata"], .object(["oneSignalId": .string("p1")]))
        XCTAssertNil(ios["timeZone"], "an offset names no zone")
        XCTAssertEqual(
            converter.convert(["p1", hex, "3600", "0", "{}", "f", "", "", ""]).notes,
            ["time zones given only as a UTC offset left out"])
        XCTAssertEqual(
            line(converter.convert(["p2", "t:APA91b", "", "1", "", "f", "", "", ""]))["platform"], .string("fcm"))
        XCTAssertEqual(
            line(converter.convert(["p3", "hmstoken", "", "13", "", "f", "", "", ""]))["platform"], .string("hms"))
        let web = line(
            converter.convert([
                "p4", "https://updates.push.services.mozilla.com/wpush/v2/x", "", "8", "", "f", "", "au", "pk",
            ]))
        XCTAssertEqual(
            web["subscription"],
            .object([
                "endpoint": .string("https://updates.push.services.mozilla.com/wpush/v2/x"),
                "keys": .object(["auth": .string("au"), "p256dh": .string("pk")]),
            ]))
    }

    func testOneSignalRowsUnsubscribedOfOtherTypesOrWebWithoutKeysAreRefused() throws {
        let converter = try oneSignal()
        XCTAssertEqual(
            refusal(converter.convert(["p", hex, "", "0", "", "t", "", "", ""]))?.reason,
            "unsubscribed at OneSignal (invalid_identifier = t)")
        XCTAssertEqual(
            refusal(converter.convert(["p", "a@example.com", "", "11", "", "f", "", "", ""]))?.reason,
            "device_type 11 (email) is not one push-server sends to")
        XCTAssertTrue(
            refusal(converter.convert(["p", "https://fcm.googleapis.com/fcm/send/x", "", "5", "", "f", "", "", ""]))?
                .reason.contains("web_auth and web_p256") == true)
        XCTAssertTrue(
            refusal(converter.convert(["p", hex, "", "0", "", "f", "", ""]))?.reason.contains(
                "8 fields, the header has 9") == true)
    }

    func testTagsBecomeInterestsOnlyWhereMapped() throws {
        let tags = #"{"team":"arsenal","news":"1","vip":"0","secret":"x"}"#
        XCTAssertNil(
            line(try oneSignal().convert(["p", hex, "", "0", tags, "f", "", "", ""]))["interests"],
            "no --map, no interests")
        let mapped = line(
            try oneSignal("tag:team=team-{value} tag:news=news tag:vip=vip tag:missing=m")
                .convert(["p", hex, "", "0", tags, "f", "", "", ""]))
        XCTAssertEqual(
            mapped["interests"], .array([.string("team-arsenal"), .string("news")]), "vip is \"0\", missing is absent")
        let bad = try oneSignal("tag:team={value}").convert([
            "p", hex, "", "0", #"{"team":"not valid!"}"#, "f", "", "", "",
        ])
        XCTAssertEqual(line(bad)["interests"], .array([]))
        XCTAssertEqual(bad.notes, ["mapped tags that are not interest names dropped"])
        XCTAssertTrue(
            refusal(try oneSignal("tag:team=t").convert(["p", hex, "", "0", "[1]", "f", "", "", ""]))?
                .reason.contains("not a JSON object") == true)
    }

    func testAHeaderWithoutTheTokenColumnIsNotAOneSignalExport() {
        XCTAssertThrowsError(try OneSignalConverter(header: ["id", "device_type"], options: ProviderImportOptions()))
        XCTAssertThrowsError(
            try OneSignalConverter(
                header: ["identifier", "device_type", "identifier"], options: ProviderImportOptions()))
    }

    func testMapRulesAreCheckedForTheProvider() {
        XCTAssertThrowsError(try ProviderImportOptions.parse(map: "tag:a=b", snsPlatform: nil, for: .parse))
        XCTAssertThrowsError(
            try ProviderImportOptions.parse(map: "CustomUserData=user", snsPlatform: nil, for: .onesignal))
        XCTAssertThrowsError(try ProviderImportOptions.parse(map: "tag:=x", snsPlatform: nil, for: .onesignal))
        XCTAssertThrowsError(
            try ProviderImportOptions.parse(map: "user=external_user_id", snsPlatform: nil, for: .onesignal))
        XCTAssertThrowsError(try ProviderImportOptions.parse(map: nil, snsPlatform: "ADM", for: .sns))
        XCTAssertEqual(
            try ProviderImportOptions.parse(map: "CustomUserData=user", snsPlatform: "GCM", for: .sns),
            ProviderImportOptions(customUserDataIsUser: true, snsPlatform: "GCM"))
    }

    // MARK: SNS

    private func endpoint(_ platform: String, _ attributes: String) -> [String: JSONValue] {
        object("{\"EndpointArn\":\"arn:aws:sns:eu-west-1:1:endpoint/\(platform)/App/id\",\"Attributes\":\(attributes)}")
    }

    func testSNSPlatformAndEnvironmentComeFromTheEndpointArnOrTheOption() throws {
        let sandbox = line(
            SNSEndpointConverter.convert(
                endpoint(
                    "APNS_SANDBOX", "{\"Token\":\"\(hex.uppercased())\",\"Enabled\":\"true\",\"CustomUserData\":\"u\"}"),
                options: ProviderImportOptions()))
        XCTAssertEqual(
            sandbox,
            [
                "platform": .string("apns"), "token": .string(hex), "environment": .string("sandbox"),
                "environmentDeclared": .bool(true),
            ], "CustomUserData is no user id without --map")
        let production = line(
            SNSEndpointConverter.convert(
                endpoint("APNS", "{\"Token\":\"\(hex)\",\"CustomUserData\":\"u\"}"),
                options: ProviderImportOptions(customUserDataIsUser: true)))
        XCTAssertEqual(production["environment"], .string("production"))
        XCTAssertEqual(production["userId"], .string("u"))
        let overridden = line(
            SNSEndpointConverter.convert(
                object("{\"Attributes\":{\"Token\":\"t:APA91b\"}}"),
                options: ProviderImportOptions(snsPlatform: "GCM")))
        XCTAssertEqual(overridden, ["platform": .string("fcm"), "token": .string("t:APA91b")])
    }

    func testDisabledOtherPlatformsAndTokenlessSNSEndpointsAreRefused() {
        XCTAssertTrue(
            refusal(
                SNSEndpointConverter.convert(
                    endpoint("GCM", "{\"Token\":\"t:APA91b-123456\",\"Enabled\":\"false\"}"),
                    options: ProviderImportOptions()))?.reason.contains("disabled at SNS") == true)
        XCTAssertEqual(
            refusal(
                SNSEndpointConverter.convert(
                    endpoint("ADM", "{\"Token\":\"amzn1-123456789\"}"), options: ProviderImportOptions()))?
                .reason, "SNS platform ADM is not one push-server sends to")
        XCTAssertTrue(
            refusal(SNSEndpointConverter.convert(endpoint("GCM", "{}"), options: ProviderImportOptions()))?
                .reason.contains("no Attributes.Token") == true)
        XCTAssertTrue(
            refusal(
                SNSEndpointConverter.convert(
                    object("{\"Attributes\":{\"Token\":\"x\"}}"), options: ProviderImportOptions()))?
                .reason.contains("--sns-platform") == true)
    }

    // MARK: The sample files, through the readers and the device file's parser

    /// Each row of a sample file: its line and the device line parser's verdict (a record's platform and token,
    /// or the refusal's reason).
    private func verdicts(_ rows: inout some ProviderRows) throws -> [(Int, String)] {
        var all: [(Int, String)] = []
        while let row = try rows.next() {
            do {
                let value = try row.device.get()
                guard case .device(let record) = try parser.parse(value.serialized()) else {
                    XCTFail("not a device"); continue
                }
                all.append(
                    (row.line, "\(record.device.platform.rawValue) \(record.device.userID ?? "-") \(record.interests)"))
            } catch {
                all.append((row.line, "refused: \(error.reason)"))
            }
        }
        return all
    }

    private func chunks(_ name: String) throws -> () throws -> [UInt8]? {
        var bytes = ArraySlice(Array(try Data(contentsOf: Self.data.appendingPathComponent(name))))
        return {
            guard !bytes.isEmpty else { return nil }
            defer { bytes = bytes.dropFirst(97) }
            return Array(bytes.prefix(97))
        }
    }

    func testTheParseSampleRowsAndTheirLines() throws {
        var rows = JSONProviderRows(
            scanner: JSONRowScanner(nextChunk: try chunks("parse_installations.json")),
            convert: ParseInstallationConverter.convert)
        let all = try verdicts(&rows)
        XCTAssertEqual(all.map(\.0), [3, 31, 50, 63, 71, 79, 88, 96, 105])
        XCTAssertEqual(all[0].1, "apns alice [\"news\", \"sport\"]")
        XCTAssertEqual(all[1].1, "fcm bob [\"news\"]")
        XCTAssertEqual(all[2].1, "apns - [\"sport\"]")
        XCTAssertTrue(all[3].1.contains("winphone"))
        XCTAssertTrue(all[4].1.contains("no deviceToken"))
        XCTAssertEqual(all[5].1, "apns - [\"news\"]", "the same token again: the store refuses it within a batch")
        XCTAssertTrue(all[6].1.contains("hexadecimal"), all[6].1)
        XCTAssertTrue(all[7].1.contains("Expo"))
        XCTAssertTrue(all[8].1.contains("PushSubscription"))
        var mongo = JSONProviderRows(
            scanner: JSONRowScanner(nextChunk: try chunks("parse_installations.mongo.ndjson")),
            convert: ParseInstallationConverter.convert)
        XCTAssertEqual(
            try verdicts(&mongo).map { "\($0.0) \($0.1)" },
            [
                "1 apns carol [\"news\"]", "2 fcm dave [\"sport\"]",
                "3 refused: deviceType embedded is not one push-server sends to",
            ])
    }

    func testTheOneSignalSampleRowsAndTheirLines() throws {
        let options = try ProviderImportOptions.parse(
            map: "tag:team=team-{value} tag:news=news", snsPlatform: nil, for: .onesignal)
        var rows = OneSignalRows(reader: CSVReader(nextChunk: try chunks("onesignal_players.csv")), options: options)
        let all = try verdicts(&rows)
        XCTAssertEqual(all.map(\.0), [2, 3, 4, 5, 6, 8, 9, 10, 11])
        XCTAssertEqual(all[0].1, "apns carol [\"news\", \"team-arsenal\"]")
        XCTAssertEqual(all[1].1, "fcm dave [\"team-chelsea\"]")
        XCTAssertTrue(all[2].1.contains("invalid_identifier = t"))
        XCTAssertTrue(all[3].1.contains("email"))
        XCTAssertEqual(all[4].1, "fcm - [\"team-arsenal\"]", "a quoted field over two lines")
        XCTAssertEqual(all[5].1, "hms erin []")
        XCTAssertTrue(all[6].1.contains("web_auth"))
        XCTAssertTrue(all[7].1.contains("not RFC 4180 CSV: field 1: a quote inside an unquoted field"), all[7].1)
        XCTAssertEqual(all[8].1, all[0].1, "the duplicate row converts alike; the store refuses it within a batch")
    }

    func testTheSNSSampleRowsAndTheirLines() throws {
        var rows = JSONProviderRows(scanner: JSONRowScanner(nextChunk: try chunks("sns_endpoints.json"))) {
            SNSEndpointConverter.convert($0, options: ProviderImportOptions(customUserDataIsUser: true))
        }
        let all = try verdicts(&rows)
        XCTAssertEqual(all.map(\.0), [3, 11, 19, 27, 34, 40])
        XCTAssertEqual(
            all.map(\.1).map { $0.prefix(20) },
            [
                "apns frank []", "fcm grace []", "refused: disabled at", "refused: SNS platfor",
                "refused: no Attribut", "apns - []",
            ])
    }
}
