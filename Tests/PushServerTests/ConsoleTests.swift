import APNsClient
import BeamsModel
import ConfigModel
import FCMClient
import JSON
import Observability
import PushStore
import TestSupport
import WebPush
import XCTest

@testable import PublishEngine
@testable import PushServer

/// The console's pure parts: its config keys, the embedded files, the per-minute series and the test-push rules.
/// The page itself is tested in a real browser (Tests/console) and its endpoints over sockets (Tests/sdk).
final class ConsoleTests: XCTestCase {
    private let instanceJSON =
        #"{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef"}"#
    private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardizedFileURL

    private func errors(_ json: String) -> [String] {
        configErrors { _ = try ServerConfig.parse(Data(json.utf8)) }
    }

    // MARK: Config

    func testConsoleIsOffByDefaultAndOnInTheExampleConfigOnly() throws {
        let (defaults, _) = try ServerConfig.parse(Data(#"{"instances":[\#(instanceJSON)]}"#.utf8))
        XCTAssertFalse(defaults.console.enabled)
        XCTAssertEqual(defaults.console.testPushesPerSecond, 5)
        let (example, _) = try ServerConfig.load(path: repository.appendingPathComponent("config.example.json").path)
        XCTAssertTrue(example.console.enabled)
        let production = try XCTUnwrap(
            FileManager.default.contents(
                atPath: repository.appendingPathComponent("deploy/config.production.json").path))
        XCTAssertEqual(
            JSONValue.parse(production)?["console"]?["enabled"], .bool(false),
            "the production sample keeps the console off, explicitly")
    }

    func testConsoleKeysAreCheckedWithFieldPreciseErrors() throws {
        XCTAssertEqual(
            errors(#"{"console":{"enabled":"yes"},"instances":[\#(instanceJSON)]}"#),
            ["console.enabled: must be true or false, got string"])
        XCTAssertEqual(
            errors(#"{"console":{"enabled":1},"instances":[\#(instanceJSON)]}"#),
            ["console.enabled: must be true or false, got number"])
        XCTAssertEqual(
            errors(#"{"console":{"testPushesPerSecond":0},"instances":[\#(instanceJSON)]}"#),
            ["console.testPushesPerSecond: must be between 1 and 1000, got 0"])
        XCTAssertEqual(
            errors(#"{"console":[],"instances":[\#(instanceJSON)]}"#), ["console: must be an object, got array"])
        let (config, warnings) = try ServerConfig.parse(
            Data(
                #"{"console":{"enabled":true,"testPushesPerSecond":2,"enable":true},"instances":[\#(instanceJSON)]}"#
                    .utf8))
        XCTAssertTrue(config.console.enabled)
        XCTAssertEqual(config.console.testPushesPerSecond, 2)
        XCTAssertEqual(
            warnings.filter { $0.path.hasPrefix("console") }.map(\.description),
            ["console.enable: unknown key (ignored) (warning)"])
    }

    // MARK: Embedded files

    func testEmbeddedFilesAreByteForByteTheFilesInTheConsoleFolder() throws {
        for asset in [ConsoleAssets.index, ConsoleAssets.script, ConsoleAssets.styles, ConsoleAssets.favicon] {
            let file = repository.appendingPathComponent("console").appendingPathComponent(asset.path)
            let bytes = try XCTUnwrap(FileManager.default.contents(atPath: file.path), file.path)
            // A Bool, not the arrays: a failure message of two whole files says less than this one.
            XCTAssertTrue(
                asset.bytes == Array(bytes),
                "console/\(asset.path) differs from its embedded copy: the console plugin did not rerun")
        }
    }

    func testAssetsHaveExactContentTypesAndDistinctStrongETags() {
        let assets = [ConsoleAssets.index, ConsoleAssets.script, ConsoleAssets.styles, ConsoleAssets.favicon]
        XCTAssertEqual(
            assets.map(\.contentType),
            [
                "text/html; charset=utf-8", "text/javascript; charset=utf-8",
                "text/css; charset=utf-8", "image/x-icon",
            ])
        XCTAssertEqual(Set(assets.map(\.etag)).count, assets.count)
        for asset in assets {
            XCTAssertTrue(
                asset.etag.hasPrefix("\"") && asset.etag.hasSuffix("\"") && asset.etag.count == 18, asset.etag)
        }
        XCTAssertNotEqual(
            ConsoleAssets.Asset(path: "a", contentType: "x", text: "a").etag,
            ConsoleAssets.Asset(path: "a", contentType: "x", text: "b").etag)
    }

    func testThePageHasNoInlineScriptStyleOrHandlers() throws {
        let html = String(decoding: ConsoleAssets.index.bytes, as: UTF8.self)
        XCTAssertFalse(html.contains("style="), "inline styles are blocked by the CSP")
        XCTAssertFalse(
            html.range(of: #"\son[a-z]+="#, options: .regularExpression) != nil, "inline handlers are blocked")
        for script in html.components(separatedBy: "<script").dropFirst() {
            XCTAssertTrue(script.hasPrefix(#" src="/console/app.js" defer></script>"#), "only the external script")
        }
        let script = String(decoding: ConsoleAssets.script.bytes, as: UTF8.self)
        for sink in [".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            XCTAssertFalse(script.contains(sink), "values are rendered as text, never parsed as HTML or code: \(sink)")
        }
        XCTAssertFalse(script.contains("localStorage."), "the secret never goes to localStorage")
        XCTAssertFalse(script.contains("document.cookie"), "nor to a cookie")
    }

    // MARK: Notifications per minute

    func testActivityCountsPerMinuteAndForgetsMinutesOlderThanTheWindow() {
        let activity = DeliveryActivity(instanceIDs: ["8A0C5C1E-4B1E-4F4E-9D55-2F6F8B2B7C11"], minutes: 3)
        let id = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)  // a minute boundary (divisible by 60)
        activity.record(instanceID: id, accepted: true, at: t0)
        activity.record(instanceID: id, accepted: true, at: t0.addingTimeInterval(59))
        activity.record(instanceID: id, accepted: false, at: t0.addingTimeInterval(61))
        XCTAssertEqual(
            activity.series(instanceID: id, now: t0.addingTimeInterval(61)).map { [$0.accepted, $0.failed] },
            [[0, 0], [2, 0], [0, 1]])
        XCTAssertEqual(
            activity.series(instanceID: id, now: t0.addingTimeInterval(61)).first?.start,
            t0.addingTimeInterval(-60))
        // Three minutes later the first minute's slot is reused: its old counts must not reappear.
        activity.record(instanceID: id, accepted: false, at: t0.addingTimeInterval(180))
        XCTAssertEqual(
            activity.series(instanceID: id, now: t0.addingTimeInterval(180)).map { [$0.accepted, $0.failed] },
            [[0, 1], [0, 0], [0, 1]])
    }

    func testActivityIgnoresUnknownInstancesAndAbsurdClocks() {
        let activity = DeliveryActivity(instanceIDs: ["a"], minutes: 60)
        activity.record(instanceID: "b", accepted: true)
        XCTAssertEqual(activity.series(instanceID: "b"), [])
        activity.record(instanceID: "a", accepted: true, at: Date(timeIntervalSince1970: -1e300))
        activity.record(instanceID: "a", accepted: true, at: Date(timeIntervalSince1970: .infinity))
        XCTAssertEqual(activity.series(instanceID: "a").count, 60)
    }

    // MARK: Test push rules

    private func runtime(apns: Bool = true) throws -> InstanceRuntime {
        var config = InstanceConfig(id: "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11", secretKey: "s")
        guard apns else { return try InstanceRuntime(config: config) }
        let key = try TestKeys.makeP256()
        addTeardownBlock { TestKeys.remove(key) }
        config.apns = APNsInstanceConfig(
            teamID: "TEAM123456", keyID: "KEY1234567", keyPath: key.privateKeyPath,
            topic: "com.example.app", defaultEnvironment: .sandbox)
        return try InstanceRuntime(config: config)
    }

    private func problem(_ options: TestPush.Options) throws -> TestPush.Problem? {
        do {
            _ = try TestPush.plan(options, instance: try runtime())
            return nil
        } catch let problem as TestPush.Problem {
            return problem
        }
    }

    func testTokensAreAcceptedInXcodesSpellingAndNormalised() throws {
        let plan = try TestPush.plan(
            TestPush.Options(deviceToken: "<A1B2C3D4 E5F60718\n293A4B5C 6D7E8F90>"), instance: try runtime())
        XCTAssertEqual(plan.request.deviceToken, "a1b2c3d4e5f60718293a4b5c6d7e8f90")
        XCTAssertEqual(plan.environment, .sandbox, "the instance's default environment")
        XCTAssertEqual(plan.request.topic, "com.example.app")
        XCTAssertEqual(
            JSONValue.parse(plan.request.payload), .object(["aps": .object(["alert": .string(TestPush.defaultAlert)])]))
        XCTAssertNotNil(plan.request.apnsID)
    }

    func testEachBadOptionIsNamedByFieldAndFlag() throws {
        let token = String(repeating: "ab", count: 32)
        XCTAssertEqual(
            try problem(.init(deviceToken: "  <> ")),
            .init(field: "deviceToken", flag: "device-token", message: "is required"))
        XCTAssertEqual(try problem(.init(deviceToken: "xyz"))?.field, "deviceToken")
        XCTAssertEqual(try problem(.init(deviceToken: "abc"))?.field, "deviceToken", "odd length")
        XCTAssertEqual(try problem(.init(deviceToken: String(repeating: "ab", count: 201)))?.field, "deviceToken")
        XCTAssertEqual(try problem(.init(deviceToken: token, environment: "staging"))?.field, "environment")
        XCTAssertEqual(try problem(.init(deviceToken: token, alert: "a", payload: Array("{}".utf8)))?.field, "payload")
        XCTAssertEqual(
            try problem(.init(deviceToken: token, payload: Array("[1]".utf8)))?.message, "must be a JSON object")
        XCTAssertEqual(try problem(.init(deviceToken: token, payload: Array("{".utf8)))?.field, "payload")
        XCTAssertEqual(
            try problem(.init(deviceToken: token, pushType: "loud")),
            .init(
                field: "pushType", flag: "push-type",
                message:
                    "must be one of alert, background, complication, controls, fileprovider, liveactivity, location, mdm, pushtotalk, voip, widgets"
            ))
        XCTAssertEqual(
            try problem(.init(deviceToken: token, priority: 7))?.description, "--priority must be 10, 5 or 1")
        XCTAssertEqual(try problem(.init(deviceToken: token, expiration: -1))?.field, "expiration")
        XCTAssertEqual(try problem(.init(deviceToken: token, expiration: Int.max))?.field, "expiration")
        XCTAssertEqual(
            try problem(.init(deviceToken: token, collapseID: String(repeating: "c", count: 65)))?.flag, "collapse-id")
        XCTAssertNil(
            try problem(
                .init(
                    deviceToken: token, payload: Array(#"{"aps":{"content-available":1}}"#.utf8),
                    pushType: "background", priority: 5, topic: "com.example.other",
                    collapseID: "c", expiration: 0)))
    }

    func testAnInstanceWithoutCredentialsCannotSendTestPushes() throws {
        XCTAssertThrowsError(
            try TestPush.plan(
                TestPush.Options(deviceToken: String(repeating: "ab", count: 32)),
                instance: try runtime(apns: false))
        ) { error in
            XCTAssertEqual((error as? TestPush.Problem)?.field, "instance")
        }
    }

    func testAnswersKeepApplesFieldsVerbatim() {
        let timestamp = Date(timeIntervalSince1970: 1_700_000_000)
        let gone = TestPush.Answer(
            .response(
                APNsResponse(
                    status: 410, apnsID: "id", reason: .unregistered,
                    timestamp: timestamp)))
        XCTAssertEqual(
            gone.lines(environment: .production),
            [
                "environment: production", "status: 410", "reason: Unregistered",
                "meaning: \(APNsReason.unregistered.meaning)",
                "apns-id: id", "apns-unique-id: -", "timestamp: 2023-11-14T22:13:20.000Z", "attempts: 1",
            ])
        XCTAssertEqual(gone.json["timestamp"], .int(1_700_000_000_000))
        let unknown = TestPush.Answer(.response(APNsResponse(status: 400, reason: .unknown("NewReason"))))
        XCTAssertEqual(unknown.reason, "NewReason")
        XCTAssertNil(unknown.meaning, "an unknown reason is shown as is, without a guessed meaning")
        let local = TestPush.Answer(.failure(.invalidRequest(.backgroundWithImmediatePriority)))
        XCTAssertEqual(local.reason, "BadPriority")
        XCTAssertNil(local.status)
        XCTAssertEqual(local.json["status"], .null)
        let rejected = TestPush.Answer(.failure(.configuration(.rejected(status: 403, reason: .invalidProviderToken))))
        XCTAssertEqual(rejected.status, 403)
        XCTAssertEqual(rejected.reason, "InvalidProviderToken")
        XCTAssertNotNil(rejected.failure)
        let absurd = TestPush.Answer(
            .response(
                APNsResponse(
                    status: 410, reason: .unregistered,
                    timestamp: Date(timeIntervalSince1970: 1e300))))
        XCTAssertNil(absurd.timestampMillis, "no trap on a timestamp beyond Int64 milliseconds")
    }

    func testTestPushBodyFieldsAreTypedAndUnknownOnesRefused() throws {
        func body(_ json: String) throws(BeamsError) -> TestPush.Options {
            try TestPushRequest.parse(JSONValue.parse(Array(json.utf8))?.objectValue ?? [:]).apns
        }
        XCTAssertEqual(
            try body(#"{"deviceToken":"ab","payload":"{\"aps\":{}}","priority":5}"#),
            TestPush.Options(deviceToken: "ab", payload: Array(#"{"aps":{}}"#.utf8), priority: 5))
        XCTAssertEqual(
            try body(#"{"deviceToken":"ab","payload":{"aps":{"badge":1}}}"#).payload,
            Array(#"{"aps":{"badge":1}}"#.utf8))
        XCTAssertThrowsError(try body(#"{}"#)) {
            XCTAssertEqual(($0 as? BeamsError)?.detail, "`deviceToken`: deviceToken is required")
        }
        XCTAssertThrowsError(try body(#"{"deviceToken":"ab","token":"x"}"#)) {
            XCTAssertEqual(($0 as? BeamsError)?.statusCode, 422)
        }
        XCTAssertThrowsError(try body(#"{"deviceToken":1}"#)) {
            XCTAssertEqual(($0 as? BeamsError)?.detail, "`deviceToken`: Invalid type. Expected: string, given: integer")
        }
        XCTAssertThrowsError(try body(#"{"deviceToken":"ab","priority":"10"}"#)) {
            XCTAssertEqual(($0 as? BeamsError)?.statusCode, 422)
        }
        XCTAssertThrowsError(try body(#"{"deviceToken":"ab","expiration":1.5}"#)) {
            XCTAssertEqual(($0 as? BeamsError)?.statusCode, 422)
        }
        XCTAssertThrowsError(try body(#"{"deviceToken":"ab","payload":[1]}"#)) {
            XCTAssertEqual(($0 as? BeamsError)?.statusCode, 422)
        }
    }

    // MARK: Test push to every platform

    private func request(_ json: String) throws(BeamsError) -> TestPushRequest {
        try TestPushRequest.parse(JSONValue.parse(Array(json.utf8))?.objectValue ?? [:])
    }

    private func beamsError(_ body: () throws -> Any) -> BeamsError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? BeamsError
        }
    }

    func testATestPushNamesItsDeviceByTokenOrByIdNeverBoth() throws {
        XCTAssertEqual(try request(#"{"deviceToken":"tok","platform":"fcm"}"#).device, .token("tok"))
        XCTAssertEqual(try request(#"{"deviceToken":"tok","platform":"fcm"}"#).platform, .fcm)
        XCTAssertEqual(try request(#"{"deviceId":"hms-1"}"#).device, .id("hms-1"))
        XCTAssertNil(try request(#"{"deviceId":"hms-1"}"#).platform, "an id brings its device's platform")
        XCTAssertEqual(
            beamsError { try self.request(#"{"deviceToken":"a","deviceId":"b"}"#) }?.detail,
            "`deviceId`: give deviceToken or deviceId, not both")
        XCTAssertEqual(beamsError { try self.request(#"{"deviceId":""}"#) }?.detail, "`deviceId`: must not be empty")
        XCTAssertEqual(
            beamsError { try self.request(#"{"deviceToken":"a","platform":"android"}"#) }?.detail,
            "`platform`: must be one of apns, fcm, web, unifiedpush, hms")
        XCTAssertEqual(beamsError { try self.request(#"{"deviceId":1}"#) }?.statusCode, 422)
        XCTAssertEqual(
            beamsError { try self.request(#"{"deviceToken":"a","data":[1]}"#) }?.detail,
            "`data`: Invalid type. Expected: object, given: array")
    }

    func testFieldsOfTheOtherPlatformKindAreRefusedByName() throws {
        for platform in [Platform.fcm, .web, .unifiedpush, .hms] {
            for field in [
                #""environment":"sandbox""#, #""alert":"a""#, #""priority":10"#, #""topic":"t""#,
                #""pushType":"alert""#, #""collapseId":"c""#, #""expiration":0"#,
            ] {
                let parsed = try request(#"{"deviceId":"d",\#(field)}"#)
                let error = beamsError { try parsed.content(for: platform) }
                XCTAssertEqual(error?.statusCode, 422, "\(platform) \(field)")
                XCTAssertTrue(error?.detail.contains("applies to APNs only") == true, error?.detail ?? "accepted")
            }
            let text = try request(#"{"deviceId":"d","title":"T","body":"B","data":{"k":"v"}}"#).content(for: platform)
            XCTAssertEqual(text, PlatformTestPush.Content(title: "T", body: "B", data: ["k": .string("v")]))
            let section = try request(#"{"deviceId":"d","payload":"{\"data\":{\"k\":\"v\"}}"}"#).content(for: platform)
            XCTAssertEqual(section.section, ["data": .object(["k": .string("v")])])
            XCTAssertEqual(
                beamsError { try self.request(#"{"deviceId":"d","payload":"[1]"}"#).content(for: platform) }?.detail,
                "`payload`: must be a JSON object (the \(platform.rawValue) section of a publish)")
        }
        let apns = try request(#"{"deviceToken":"ab","title":"T"}"#)
        XCTAssertTrue(beamsError { try apns.content(for: .apns) }?.detail.hasPrefix("`title`: applies to fcm") == true)
    }

    func testEachPlatformsMessageIsBuiltByThePublishSectionOfThatPlatform() throws {
        let instance = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
        let content = PlatformTestPush.Content(title: "Hello", body: "World", data: ["order": .string("42")])
        guard
            case (.fcm(let template), let fcmBytes) = try PlatformTestPush.message(
                content, platform: .fcm, instanceID: instance)
        else { return XCTFail("fcm") }
        let fcm = try XCTUnwrap(JSONValue.parse(template.body(token: "tok")))
        XCTAssertEqual(fcm["message"]?["notification"], .object(["title": .string("Hello"), "body": .string("World")]))
        XCTAssertEqual(fcm["message"]?["data"]?["order"], .string("42"))
        XCTAssertEqual(fcm["message"]?["token"], .string("tok"))
        XCTAssertGreaterThan(fcmBytes, 0)
        for platform in [Platform.web, .unifiedpush] {
            guard
                case (.webPush(let message), let bytes) = try PlatformTestPush.message(
                    content, platform: platform, instanceID: instance)
            else { return XCTFail("\(platform)") }
            let body = try XCTUnwrap(JSONValue.parse(message.payload))
            XCTAssertEqual(body["notification"]?["title"], .string("Hello"))
            XCTAssertEqual(body["data"]?["order"], .string("42"))
            XCTAssertEqual(body["data"]?["pusher"]?["publishId"], .string(PlatformTestPush.publishID))
            XCTAssertEqual(bytes, message.payload.count)
        }
        guard case (.hms(let hms), _) = try PlatformTestPush.message(content, platform: .hms, instanceID: instance)
        else { return XCTFail("hms") }
        XCTAssertEqual(hms["notification"], .object(["title": .string("Hello"), "body": .string("World")]))
        XCTAssertEqual(
            hms["android"]?["notification"]?["click_action"], .object(["type": .int(3)]),
            "Huawei refuses a notification without click_action: the publish's default is added")
        XCTAssertEqual(hms["data"]?.stringValue.flatMap { JSONValue.parse(Array($0.utf8)) }?["order"], .string("42"))
        // Nothing but a body: the default text.
        guard
            case (.webPush(let bare), _) = try PlatformTestPush.message(
                PlatformTestPush.Content(), platform: .web, instanceID: instance)
        else { return XCTFail("web") }
        XCTAssertEqual(JSONValue.parse(bare.payload)?["notification"]?["body"], .string(PlatformTestPush.defaultBody))
    }

    func testAMessageAPublishWouldRefuseIsRefusedWithTheSectionsPath() throws {
        let instance = "i"
        let big = PlatformTestPush.Content(body: String(repeating: "x", count: 5000))
        for platform in [Platform.web, .unifiedpush, .hms] {
            let error = beamsError { try PlatformTestPush.message(big, platform: platform, instanceID: instance) }
            XCTAssertEqual(error?.statusCode, 422, "\(platform): over the encrypted-record or Huawei limit")
        }
        XCTAssertEqual(
            beamsError {
                try PlatformTestPush.message(
                    PlatformTestPush.Content(section: ["badge": .int(1)]), platform: .hms, instanceID: instance)
            }?.detail, "`hms.badge`: Unknown field: the hms section takes notification, data and android")
        XCTAssertEqual(
            beamsError {
                try PlatformTestPush.message(
                    PlatformTestPush.Content(section: ["urgency": .string("now")]), platform: .unifiedpush,
                    instanceID: instance)
            }?.statusCode, 422)
        XCTAssertEqual(
            beamsError {
                try PlatformTestPush.message(
                    PlatformTestPush.Content(section: ["bogus": .int(1)]), platform: .fcm, instanceID: instance)
            }?.statusCode, 422)
        XCTAssertEqual(
            beamsError {
                try PlatformTestPush.message(
                    PlatformTestPush.Content(title: "t", section: ["data": .object([:])]), platform: .web,
                    instanceID: instance)
            }?.detail, "`payload`: give title/body/data or payload (the platform's publish section), not both")
    }

    func testProviderAnswersCarryStatusReasonAttemptsAndWhetherTheDeviceGoes() {
        let sent = PlatformTestPush.answer(FCMResult.response(.sent(name: "projects/p/messages/1"), attempts: 2))
        XCTAssertEqual(
            sent.json,
            .object([
                "status": .int(200), "reason": .null, "meaning": .null,
                "messageId": .string("projects/p/messages/1"), "attempts": .int(2), "failure": .null,
            ]))
        XCTAssertFalse(sent.removesDevice)
        let unregistered = PlatformTestPush.answer(
            FCMResult.response(
                .invalidToken(
                    FCMErrorInfo(httpStatus: 404, status: "NOT_FOUND", errorCode: "UNREGISTERED", message: "")),
                attempts: 1))
        XCTAssertEqual(unregistered.status, 404)
        XCTAssertEqual(unregistered.reason, "UNREGISTERED")
        XCTAssertTrue(unregistered.removesDevice)
        XCTAssertNotNil(unregistered.meaning)
        let quota = PlatformTestPush.answer(
            FCMResult.response(
                .retry(
                    FCMErrorInfo(
                        httpStatus: 429, status: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", message: ""),
                    retryAfter: nil), attempts: 3))
        XCTAssertEqual(quota.reason, "QUOTA_EXCEEDED")
        XCTAssertFalse(quota.removesDevice)
        let gone = WebPushResult.response(.subscriptionGone(status: 410), attempts: 1)
        let web = PlatformTestPush.answer(gone, verdict: DeliveryOutcome.verdict(gone))
        XCTAssertEqual([web.status, web.attempts], [410, 1])
        XCTAssertEqual(web.reason, "SubscriptionGone")
        XCTAssertTrue(web.removesDevice)
        let ntfy = WebPushResult.response(.retry(status: 507, after: nil), attempts: 4)
        let full = PlatformTestPush.answer(ntfy, verdict: DeliveryOutcome.unifiedPushVerdict(ntfy))
        XCTAssertEqual(full.reason, "NoActiveSubscriber")
        XCTAssertFalse(full.removesDevice, "ntfy's 507 keeps the device, as in a publish")
        let illegal = PlatformTestPush.answer(HMSDelivery.invalidToken(reason: "80100000"), requests: 1)
        XCTAssertEqual(illegal.status, 200, "Huawei answers HTTP 200 with its result code")
        XCTAssertEqual(illegal.reason, "80100000")
        XCTAssertTrue(illegal.removesDevice)
        let accepted = PlatformTestPush.answer(HMSDelivery.accepted, requests: 1)
        XCTAssertTrue(accepted.accepted)
        XCTAssertNil(accepted.reason)
        let noToken = PlatformTestPush.answer(HMSDelivery.failed(reason: "AccessTokenRefused", status: 0), requests: 0)
        XCTAssertNil(noToken.status)
        XCTAssertFalse(noToken.removesDevice)
    }

    func testAPlatformWithoutCredentialsIsRefusedNamingItsConfigSection() throws {
        let bare = try runtime(apns: false)
        for platform in Platform.allCases {
            XCTAssertThrowsError(try ConsoleAPI.requireSender(platform, bare)) { error in
                let beams = error as? BeamsError
                XCTAssertEqual(beams?.statusCode, 422)
                XCTAssertTrue(beams?.detail.contains("instances[].\(platform.rawValue)") == true, beams?.detail ?? "")
                XCTAssertTrue(beams?.title.hasSuffix("not configured") == true)
            }
        }
        XCTAssertNoThrow(try ConsoleAPI.requireSender(.apns, try runtime()))
    }
}
