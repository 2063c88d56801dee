import APNsClient
import JSON
@testable import PushServer
import PushStore
import TestSupport
import XCTest

/// The console's pure parts: its config keys, the embedded files, the per-minute series and the test-push rules.
/// The page itself is tested in a real browser (Tests/console) and its endpoints over sockets (Tests/sdk).
final class ConsoleTests: XCTestCase {
    private let instanceJSON = #"{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef"}"#
    private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardizedFileURL

    private func errors(_ json: String) -> [String] {
        do {
            _ = try ServerConfig.parse(Data(json.utf8))
            return []
        } catch {
            return error.issues.filter { $0.severity == .error }.map(\.description)
        }
    }

    // MARK: Config

    func testConsoleIsOffByDefaultAndOnInTheExampleConfigOnly() throws {
        let (defaults, _) = try ServerConfig.parse(Data(#"{"instances":[\#(instanceJSON)]}"#.utf8))
        XCTAssertFalse(defaults.console.enabled)
        XCTAssertEqual(defaults.console.testPushesPerSecond, 5)
        let (example, _) = try ServerConfig.load(path: repository.appendingPathComponent("config.example.json").path)
        XCTAssertTrue(example.console.enabled)
        let production = try XCTUnwrap(FileManager.default.contents(
            atPath: repository.appendingPathComponent("deploy/config.production.json").path))
        XCTAssertEqual(JSONValue.parse(production)?["console"]?["enabled"], .bool(false),
                       "the production sample keeps the console off, explicitly")
    }

    func testConsoleKeysAreCheckedWithFieldPreciseErrors() throws {
        XCTAssertEqual(errors(#"{"console":{"enabled":"yes"},"instances":[\#(instanceJSON)]}"#),
                       ["console.enabled: must be true or false, got string"])
        XCTAssertEqual(errors(#"{"console":{"enabled":1},"instances":[\#(instanceJSON)]}"#),
                       ["console.enabled: must be true or false, got number"])
        XCTAssertEqual(errors(#"{"console":{"testPushesPerSecond":0},"instances":[\#(instanceJSON)]}"#),
                       ["console.testPushesPerSecond: must be between 1 and 1000, got 0"])
        XCTAssertEqual(errors(#"{"console":[],"instances":[\#(instanceJSON)]}"#), ["console: must be an object, got array"])
        let (config, warnings) = try ServerConfig.parse(Data(
            #"{"console":{"enabled":true,"testPushesPerSecond":2,"enable":true},"instances":[\#(instanceJSON)]}"#.utf8))
        XCTAssertTrue(config.console.enabled)
        XCTAssertEqual(config.console.testPushesPerSecond, 2)
        XCTAssertEqual(warnings.filter { $0.path.hasPrefix("console") }.map(\.description),
                       ["console.enable: unknown key (ignored) (warning)"])
    }

    // MARK: Embedded files

    func testEmbeddedFilesAreByteForByteTheFilesInTheConsoleFolder() throws {
        for asset in [ConsoleAssets.index, ConsoleAssets.script, ConsoleAssets.styles, ConsoleAssets.favicon] {
            let file = repository.appendingPathComponent("console").appendingPathComponent(asset.path)
            let bytes = try XCTUnwrap(FileManager.default.contents(atPath: file.path), file.path)
            // A Bool, not the arrays: a failure message of two whole files says less than this one.
            XCTAssertTrue(asset.bytes == Array(bytes),
                          "console/\(asset.path) differs from its embedded copy: run `make console`")
        }
    }

    func testAssetsHaveExactContentTypesAndDistinctStrongETags() {
        let assets = [ConsoleAssets.index, ConsoleAssets.script, ConsoleAssets.styles, ConsoleAssets.favicon]
        XCTAssertEqual(assets.map(\.contentType), ["text/html; charset=utf-8", "text/javascript; charset=utf-8",
                                                    "text/css; charset=utf-8", "image/x-icon"])
        XCTAssertEqual(Set(assets.map(\.etag)).count, assets.count)
        for asset in assets {
            XCTAssertTrue(asset.etag.hasPrefix("\"") && asset.etag.hasSuffix("\"") && asset.etag.count == 18, asset.etag)
        }
        XCTAssertNotEqual(ConsoleAssets.Asset(path: "a", contentType: "x", text: "a").etag,
                          ConsoleAssets.Asset(path: "a", contentType: "x", text: "b").etag)
    }

    func testThePageHasNoInlineScriptStyleOrHandlers() throws {
        let html = String(decoding: ConsoleAssets.index.bytes, as: UTF8.self)
        XCTAssertFalse(html.contains("style="), "inline styles are blocked by the CSP")
        XCTAssertFalse(html.range(of: #"\son[a-z]+="#, options: .regularExpression) != nil, "inline handlers are blocked")
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
        XCTAssertEqual(activity.series(instanceID: id, now: t0.addingTimeInterval(61)).map { [$0.accepted, $0.failed] },
                       [[0, 0], [2, 0], [0, 1]])
        XCTAssertEqual(activity.series(instanceID: id, now: t0.addingTimeInterval(61)).first?.start,
                       t0.addingTimeInterval(-60))
        // Three minutes later the first minute's slot is reused: its old counts must not reappear.
        activity.record(instanceID: id, accepted: false, at: t0.addingTimeInterval(180))
        XCTAssertEqual(activity.series(instanceID: id, now: t0.addingTimeInterval(180)).map { [$0.accepted, $0.failed] },
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
        config.apns = APNsInstanceConfig(teamID: "TEAM123456", keyID: "KEY1234567", keyPath: key.privateKeyPath,
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
        let plan = try TestPush.plan(TestPush.Options(deviceToken: "<A1B2C3D4 E5F60718\n293A4B5C 6D7E8F90>"), instance: try runtime())
        XCTAssertEqual(plan.request.deviceToken, "a1b2c3d4e5f60718293a4b5c6d7e8f90")
        XCTAssertEqual(plan.environment, .sandbox, "the instance's default environment")
        XCTAssertEqual(plan.request.topic, "com.example.app")
        XCTAssertEqual(JSONValue.parse(plan.request.payload), .object(["aps": .object(["alert": .string(TestPush.defaultAlert)])]))
        XCTAssertNotNil(plan.request.apnsID)
    }

    func testEachBadOptionIsNamedByFieldAndFlag() throws {
        let token = String(repeating: "ab", count: 32)
        XCTAssertEqual(try problem(.init(deviceToken: "  <> ")), .init(field: "deviceToken", flag: "device-token", message: "is required"))
        XCTAssertEqual(try problem(.init(deviceToken: "xyz"))?.field, "deviceToken")
        XCTAssertEqual(try problem(.init(deviceToken: "abc"))?.field, "deviceToken", "odd length")
        XCTAssertEqual(try problem(.init(deviceToken: String(repeating: "ab", count: 201)))?.field, "deviceToken")
        XCTAssertEqual(try problem(.init(deviceToken: token, environment: "staging"))?.field, "environment")
        XCTAssertEqual(try problem(.init(deviceToken: token, alert: "a", payload: Array("{}".utf8)))?.field, "payload")
        XCTAssertEqual(try problem(.init(deviceToken: token, payload: Array("[1]".utf8)))?.message, "must be a JSON object")
        XCTAssertEqual(try problem(.init(deviceToken: token, payload: Array("{".utf8)))?.field, "payload")
        XCTAssertEqual(try problem(.init(deviceToken: token, pushType: "loud")),
                       .init(field: "pushType", flag: "push-type", message: "must be one of alert, background, complication, controls, fileprovider, liveactivity, location, mdm, pushtotalk, voip, widgets"))
        XCTAssertEqual(try problem(.init(deviceToken: token, priority: 7))?.description, "--priority must be 10, 5 or 1")
        XCTAssertEqual(try problem(.init(deviceToken: token, expiration: -1))?.field, "expiration")
        XCTAssertEqual(try problem(.init(deviceToken: token, expiration: Int.max))?.field, "expiration")
        XCTAssertEqual(try problem(.init(deviceToken: token, collapseID: String(repeating: "c", count: 65)))?.flag, "collapse-id")
        XCTAssertNil(try problem(.init(deviceToken: token, payload: Array(#"{"aps":{"content-available":1}}"#.utf8),
                                       pushType: "background", priority: 5, topic: "com.example.other",
                                       collapseID: "c", expiration: 0)))
    }

    func testAnInstanceWithoutCredentialsCannotSendTestPushes() throws {
        XCTAssertThrowsError(try TestPush.plan(TestPush.Options(deviceToken: String(repeating: "ab", count: 32)),
                                               instance: try runtime(apns: false))) { error in
            XCTAssertEqual((error as? TestPush.Problem)?.field, "instance")
        }
    }

    func testAnswersKeepApplesFieldsVerbatim() {
        let timestamp = Date(timeIntervalSince1970: 1_700_000_000)
        let gone = TestPush.Answer(.response(APNsResponse(status: 410, apnsID: "id", reason: .unregistered,
                                                          timestamp: timestamp)))
        XCTAssertEqual(gone.lines(environment: .production), [
            "environment: production", "status: 410", "reason: Unregistered", "meaning: \(APNsReason.unregistered.meaning)",
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
        let absurd = TestPush.Answer(.response(APNsResponse(status: 410, reason: .unregistered,
                                                            timestamp: Date(timeIntervalSince1970: 1e300))))
        XCTAssertNil(absurd.timestampMillis, "no trap on a timestamp beyond Int64 milliseconds")
    }

    func testTestPushBodyFieldsAreTypedAndUnknownOnesRefused() throws {
        func body(_ json: String) throws(BeamsError) -> TestPush.Options {
            try ConsoleAPI.options(JSONValue.parse(Array(json.utf8))?.objectValue ?? [:])
        }
        XCTAssertEqual(try body(#"{"deviceToken":"ab","payload":"{\"aps\":{}}","priority":5}"#),
                       TestPush.Options(deviceToken: "ab", payload: Array(#"{"aps":{}}"#.utf8), priority: 5))
        XCTAssertEqual(try body(#"{"deviceToken":"ab","payload":{"aps":{"badge":1}}}"#).payload,
                       Array(#"{"aps":{"badge":1}}"#.utf8))
        XCTAssertThrowsError(try body(#"{}"#)) { XCTAssertEqual(($0 as? BeamsError)?.detail, "`deviceToken`: deviceToken is required") }
        XCTAssertThrowsError(try body(#"{"deviceToken":"ab","token":"x"}"#)) { XCTAssertEqual(($0 as? BeamsError)?.statusCode, 422) }
        XCTAssertThrowsError(try body(#"{"deviceToken":1}"#)) {
            XCTAssertEqual(($0 as? BeamsError)?.detail, "`deviceToken`: Invalid type. Expected: string, given: integer")
        }
        XCTAssertThrowsError(try body(#"{"deviceToken":"ab","priority":"10"}"#)) { XCTAssertEqual(($0 as? BeamsError)?.statusCode, 422) }
        XCTAssertThrowsError(try body(#"{"deviceToken":"ab","expiration":1.5}"#)) { XCTAssertEqual(($0 as? BeamsError)?.statusCode, 422) }
        XCTAssertThrowsError(try body(#"{"deviceToken":"ab","payload":[1]}"#)) { XCTAssertEqual(($0 as? BeamsError)?.statusCode, 422) }
    }
}
