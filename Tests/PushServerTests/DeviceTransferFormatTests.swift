import BeamsModel
import ConfigModel
import Foundation
import JSON
import PushStore
import WebPush
import XCTest

@testable import PushServer

/// The device file (docs/DATA-FORMAT.md) without a store: the line parser's checks, the cursor, the report and the
/// line splitter.
final class DeviceTransferFormatTests: XCTestCase {
    static let instanceID = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
    let now = Date(millisecondsSince1970: 1_700_000_000_000)
    var parser: DeviceLineParser {
        DeviceLineParser(instance: InstanceConfig(id: Self.instanceID, secretKey: "s"), now: now)
    }

    private func parse(_ text: String) throws(DeviceLineParser.Refusal) -> DeviceLineParser.Line {
        try parser.parse(Array(text.utf8))
    }

    private func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> DeviceLineParser
        .Refusal?
    {
        do {
            let parsed = try parse(text)
            XCTFail("accepted: \(parsed)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    func testAnExportedLineParsesBackToTheSameRecord() throws {
        let device = Device(
            id: "apns-0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000", instanceID: Self.instanceID, platform: .apns,
            token: String(repeating: "ab", count: 32), environment: .sandbox, environmentDeclared: true,
            bundleID: "com.example.app", metadata: #"{"sdkVersion":"4.0.0"}"#, userID: "alice",
            createdAt: Date(millisecondsSince1970: 1_600_000_000_123),
            lastRegisteredAt: Date(millisecondsSince1970: 1_650_000_000_999),
            lastResult: DeliveryResult(
                status: 410, reason: "Unregistered", at: Date(millisecondsSince1970: 1_660_000_000_001)),
            invalidatedAt: Date(millisecondsSince1970: 1_660_000_000_002), timeZone: "Europe/Paris")
        let tokens = [
            LiveActivityToken(
                deviceID: device.id, kind: .start, token: "aabbccddeeff00112233", attributesType: "Pizza",
                createdAt: Date(millisecondsSince1970: 1_600_000_000_000),
                updatedAt: Date(millisecondsSince1970: 1_600_000_000_500)),
            LiveActivityToken(
                deviceID: device.id, kind: .update, token: "00112233445566778899", attributesType: "Pizza",
                activityID: "act-1", reference: "order-7", expiresAt: Date(millisecondsSince1970: 1_700_000_040_000),
                createdAt: Date(millisecondsSince1970: 1_600_000_000_000),
                updatedAt: Date(millisecondsSince1970: 1_600_000_000_000)),
        ]
        let record = DeviceRecord(device: device, interests: ["a", "b-c"], liveActivityTokens: tokens)
        let line = DeviceDataFormat.deviceLine(
            record, cursor: DeviceExportCursor(instanceID: Self.instanceID, position: 42))
        XCTAssertEqual(line.last, UInt8(ascii: "\n"))
        XCTAssertEqual(try parse(String(decoding: line.dropLast(), as: UTF8.self)), .device(record))
    }

    func testWebSubscriptionIsWrittenAsAnObjectAndReadBackToTheCanonicalToken() throws {
        var instance = InstanceConfig(id: Self.instanceID, secretKey: "s")
        let pair = try VAPIDKeyPair.generate().keyPair
        instance.web = WebInstanceConfig(
            vapidKeyFile: "unused", keyPair: pair,
            subject: try VAPIDSubject("mailto:ops@example.com"), allowedOrigins: .any)
        let p256dh = try VAPIDKeyPair.generate().keyPair.publicKeyBase64URL
        let token =
            #"{"endpoint":"https://fcm.googleapis.com/fcm/send/abc","keys":{"auth":"AAAAAAAAAAAAAAAAAAAAAA","p256dh":""#
            + p256dh + #""}}"#
        let line = #"{"platform":"web","subscription":"# + token + "}"
        let parsed = try DeviceLineParser(instance: instance, now: now).parse(Array(line.utf8))
        guard case .device(let record) = parsed else { return XCTFail("\(parsed)") }
        XCTAssertEqual(record.device.token, token)
        // Without web push configured the device API refuses web devices; so does an import.
        XCTAssertEqual(refusal(line)?.reason, BeamsError.webNotConfigured.detail)
    }

    func testBadLinesAreRefusedWithTheDeviceAPIsReasonAndAMaskedToken() throws {
        let apns = "0123456789abcdef0123456789abcdef"
        XCTAssertEqual(refusal(#"{"platform":"apns","token":"zz\#(apns)"}"#)?.maskedToken, "…abcdef")
        XCTAssertTrue(refusal(#"{"platform":"apns","token":"zz\#(apns)"}"#)?.reason.contains("hexadecimal") == true)
        let badInterest = refusal(#"{"platform":"apns","token":"\#(apns)","interests":["no spaces"]}"#)
        XCTAssertEqual(badInterest?.maskedToken, "…abcdef")
        XCTAssertEqual(badInterest?.reason, BeamsError.invalidInterest("no spaces").detail)
        let tooMany = (0...DeviceAPI.maxInterestsPerDevice).map { "\"i\($0)\"" }.joined(separator: ",")
        XCTAssertTrue(
            refusal(#"{"platform":"apns","token":"\#(apns)","interests":[\#(tooMany)]}"#)?.reason
                .contains("more than 5000") == true)
        XCTAssertTrue(
            refusal(#"{"platform":"apns","token":"\#(apns)","timeZone":"Mars/Olympus"}"#)?.reason
                .hasPrefix("`timeZone`") == true)
        XCTAssertTrue(
            refusal(#"{"platform":"apns","token":"\#(apns)","id":"fcm-123"}"#)?.reason.hasPrefix("`id`") == true)
        XCTAssertTrue(
            refusal(#"{"platform":"apns","token":"\#(apns)","colour":"red"}"#)?.reason
                .contains("unknown member `colour`") == true)
        XCTAssertTrue(
            refusal(
                #"{"platform":"fcm","token":"\#(apns)","liveActivities":[{"kind":"start","token":"aabbccddeeff00112233","attributesType":"A"}]}"#
            )?
            .reason.contains("only apns") == true)
        XCTAssertTrue(
            refusal(#"{"platform":"fcm","token":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"}"#)?.reason
                .contains("installation auth token") == true)
        XCTAssertNil(refusal("{not json")?.maskedToken)
        XCTAssertNil(refusal(#"{"platform":"pager"}"#)?.maskedToken)
    }

    func testATokenIsNeverInARefusalWhole() throws {
        let token = "fcm-" + String(repeating: "x", count: 150) + "TAIL42"
        let refused = refusal(#"{"platform":"fcm","token":"\#(token)","interests":[1]}"#)
        XCTAssertEqual(refused?.maskedToken, "…TAIL42")
        XCTAssertFalse(refused?.reason.contains(token) ?? true)
    }

    func testOmittedTimesAreFilledWithNowAndMarked() throws {
        guard case .device(let record) = try parse(#"{"platform":"hms","token":"hms-token-1"}"#) else {
            return XCTFail()
        }
        XCTAssertEqual(record.device.createdAt, now)
        XCTAssertEqual(record.omittedTimes, [.createdAt, .lastRegisteredAt, .health])
        XCTAssertEqual(record.device.id, "", "no id: the store issues one")
    }

    func testBlankAndEndLinesImportNothingAndTheHeaderNeedsVersion1() throws {
        XCTAssertEqual(try parse(""), .blank)
        XCTAssertEqual(try parse("\r"), .blank)
        XCTAssertEqual(try parse(#"{"end":true,"devices":0,"cursor":null}"#), .end)
        XCTAssertNoThrow(try DeviceLineParser.header(Array(#"{"format":"push-server-devices","version":1}"#.utf8)))
        XCTAssertThrowsError(try DeviceLineParser.header(Array(#"{"format":"push-server-devices","version":2}"#.utf8)))
        XCTAssertThrowsError(try DeviceLineParser.header(Array(#"{"platform":"apns"}"#.utf8)))
    }

    func testCursorRoundTripsAndIsRefusedForAnotherExport() throws {
        let cursor = DeviceExportCursor(instanceID: Self.instanceID, position: 123_456_789)
        XCTAssertEqual(try DeviceExportCursor.parse(cursor.text, instanceID: Self.instanceID), cursor)
        XCTAssertThrowsError(try DeviceExportCursor.parse(cursor.text, instanceID: nil)) {
            XCTAssertEqual($0 as? DeviceExportCursor.Problem, .otherExport)
        }
        let all = DeviceExportCursor(instanceID: nil, position: 7)
        XCTAssertEqual(try DeviceExportCursor.parse(all.text, instanceID: nil), all)
        for junk in ["", "123", "djEgKiAtMQ", String(repeating: "A", count: 600)] {
            XCTAssertThrowsError(try DeviceExportCursor.parse(junk, instanceID: nil)) {
                XCTAssertEqual($0 as? DeviceExportCursor.Problem, .malformed, junk)
            }
        }
    }

    func testReportCountsOutcomesAndListsRefusalsUpToItsCap() throws {
        var report = DeviceImportReport(dryRun: true)
        report.record(.created, line: 2, maskedToken: "…aaaaaa")
        report.record(.updated, line: 3, maskedToken: "…bbbbbb")
        report.record(.unchanged, line: 4, maskedToken: "…cccccc")
        report.record(.refused("the user has maxDevicesPerUser (3) devices"), line: 5, maskedToken: "…dddddd")
        XCTAssertEqual(report.summary, "created 1, updated 1, unchanged 1, refused 1 (dry run: nothing written)")
        XCTAssertEqual(report.refusalLines, ["line 5: the user has maxDevicesPerUser (3) devices (token …dddddd)"])
        for line in 0..<(DeviceImportReport.maxListed + 5) { report.refuse(line: line, reason: "x", maskedToken: nil) }
        XCTAssertEqual(report.refused, DeviceImportReport.maxListed + 6)
        XCTAssertEqual(report.refusedLines.count, DeviceImportReport.maxListed)
        XCTAssertEqual(report.json.objectValue?["refusedNotListed"], .int(6))
    }

    func testLineSplitterReadsLinesAcrossChunksAndCutsOverlongOnes() throws {
        var chunks: [[UInt8]] = [
            Array("ab\ncd".utf8), Array("ef\n\n".utf8), Array(String(repeating: "x", count: 25).utf8),
            Array("y\nlast".utf8),
        ]
        var splitter = LineSplitter(maxLineBytes: 10) { chunks.isEmpty ? nil : chunks.removeFirst() }
        var lines: [(String, Bool)] = []
        while let (bytes, truncated) = try splitter.next() {
            lines.append((String(decoding: bytes, as: UTF8.self), truncated))
        }
        XCTAssertEqual(lines.map(\.0), ["ab", "cdef", "", "xxxxxxxxxx", "last"])
        XCTAssertEqual(lines.map(\.1), [false, false, false, true, false])
    }
}
