@testable import PushServer
import XCTest

final class ServerConfigTests: XCTestCase {
    private let validInstance = #"{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef"}"#

    private func parse(_ json: String, env: [String: String] = [:]) throws(ConfigError) -> (ServerConfig, warnings: [ConfigIssue]) {
        try ServerConfig.parse(Data(json.utf8), environment: env)
    }

    private func errors(_ json: String, env: [String: String] = [:]) -> [String] {
        do {
            _ = try parse(json, env: env)
            return []
        } catch {
            return error.issues.filter { $0.severity == .error }.map(\.description)
        }
    }

    func testExampleConfigLoadsWithoutAppleKey() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config.example.json").path
        let (config, warnings) = try ServerConfig.load(path: path)
        XCTAssertEqual(config.listen.host, "127.0.0.1")
        XCTAssertEqual(config.instances.count, 1)
        XCTAssertEqual(config.instances[0].apns?.hasCredentials, false)
        XCTAssertTrue(warnings.contains { $0.path == "instances[0].apns" }, "missing credentials are reported")
    }

    func testDefaultsApplyWhenSectionsAreOmitted() throws {
        let (config, _) = try parse(#"{"instances":[\#(validInstance)]}"#)
        XCTAssertEqual(config.listen.port, 8080)
        XCTAssertEqual(config.limits.maxBodyBytes, 1 << 20)
        XCTAssertEqual(config.storage.synchronous, .normal)
        XCTAssertEqual(config.logLevel, .info)
    }

    func testNamesTheFieldOfAMissingKeyFile() {
        let json = #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","apns":{"teamId":"ABCDE12345","keyId":"KEY1234567","keyPath":"/nonexistent/AuthKey.p8","topic":"com.example.app"}}]}"#
        XCTAssertEqual(errors(json), ["instances[0].apns.keyPath: file not found (/nonexistent/AuthKey.p8)"])
    }

    func testReportsEveryProblemAtOnce() {
        let json = #"{"listen":{"port":70000,"host":""},"log":{"level":"loud"},"storage":{"synchronous":"maybe"},"instances":[{"id":"not-a-uuid"}]}"#
        XCTAssertEqual(Set(errors(json)), [
            "listen.host: must not be empty",
            "listen.port: must be between 0 and 65535, got 70000",
            "log.level: must be one of trace, debug, info, notice, warning, error, critical",
            "storage.synchronous: must be \"normal\" or \"full\", got \"maybe\"",
            "instances[0].id: must be a UUID (Beams instance ids are UUIDs; the iOS SDK rejects others)",
            "instances[0].secretKey: one of secretKey, secretKeyEnv or secretKeyFile is required",
        ])
    }

    func testRejectsWrongTypesAndFractions() {
        XCTAssertEqual(errors(#"{"listen":{"port":"80"},"instances":[\#(validInstance)]}"#), ["listen.port: must be an integer, got string"])
        XCTAssertEqual(errors(#"{"listen":{"port":80.5},"instances":[\#(validInstance)]}"#), ["listen.port: must be an integer, got a fraction"])
        XCTAssertEqual(errors(#"{"instances":{}}"#), ["instances: must be an array"])
        XCTAssertEqual(errors("{"), ["$: not valid JSON"])
    }

    func testRejectsDuplicateInstanceIdsCaseInsensitively() {
        let upper = validInstance.replacingOccurrences(of: "8a0c5c1e", with: "8A0C5C1E")
        XCTAssertEqual(errors(#"{"instances":[\#(validInstance),\#(upper)]}"#),
                       ["instances[1].id: duplicate instance id 8A0C5C1E-4b1e-4f4e-9d55-2f6f8b2b7c11"])
    }

    func testReadsSecretFromEnvironmentOrFileAndTrimsNewline() throws {
        let env = #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKeyEnv":"PUSH_SECRET"}]}"#
        XCTAssertEqual(try parse(env, env: ["PUSH_SECRET": "from-env-0123456789abcdef0123456789\n"]).0.instances[0].secretKey, "from-env-0123456789abcdef0123456789")
        XCTAssertEqual(errors(env), ["instances[0].secretKeyEnv: environment variable PUSH_SECRET is not set"])

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("from-file-0123456789abcdef0123456789\n".utf8).write(to: dir.appendingPathComponent("secret"))
        let file = #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKeyFile":"${CREDENTIALS_DIRECTORY}/secret"}]}"#
        XCTAssertEqual(try parse(file, env: ["CREDENTIALS_DIRECTORY": dir.path]).0.instances[0].secretKey, "from-file-0123456789abcdef0123456789")
    }

    func testRejectsSecretsShorterThan32Bytes() throws {
        let short = validInstance.replacingOccurrences(of: "0123456789abcdef0123456789abcdef", with: "0123456789abcdef0123456789abcde")
        XCTAssertEqual(errors(#"{"instances":[\#(short)]}"#), [
            "instances[0].secretKey: the secret must be at least 32 bytes; generate one with `head -c 32 /dev/urandom | base64`",
        ])
        let env = #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKeyEnv":"PUSH_SECRET"}]}"#
        XCTAssertEqual(errors(env, env: ["PUSH_SECRET": "short-secret\n"]), [
            "instances[0].secretKeyEnv: the secret must be at least 32 bytes; generate one with `head -c 32 /dev/urandom | base64`",
        ])
        XCTAssertEqual(try parse(#"{"instances":[\#(validInstance)]}"#).0.instances[0].secretKey.utf8.count, 32)
    }

    func testOpsAccessDefaultsToNoListenerAndNoToken() throws {
        let (config, _) = try parse(#"{"instances":[\#(validInstance)]}"#)
        XCTAssertNil(config.ops.listen)
        XCTAssertNil(config.ops.token)
    }

    func testReadsOpsListenerAndTokenFromEveryKindOfSource() throws {
        let token = String(repeating: "t", count: 40)
        let inline = try parse(#"{"ops":{"listen":"127.0.0.1:9090","token":"\#(token)"},"instances":[\#(validInstance)]}"#).0
        XCTAssertEqual(inline.ops.listen, ServerConfig.Endpoint(host: "127.0.0.1", port: 9090))
        XCTAssertEqual(inline.ops.token, token)
        let v6 = try parse(#"{"ops":{"listen":"[::1]:0","tokenEnv":"OPS"},"instances":[\#(validInstance)]}"#,
                           env: ["OPS": token + "\n"]).0
        XCTAssertEqual(v6.ops.listen, ServerConfig.Endpoint(host: "::1", port: 0))
        XCTAssertEqual(v6.ops.token, token)
    }

    func testRejectsBadOpsListenerAndShortOrDoubleToken() {
        for bad in ["localhost:9090", "127.0.0.1", "127.0.0.1:70000", "::1:9090", "[::1]9090", "127.0.0.1:+80", "[127.0.0.1]:80"] {
            XCTAssertEqual(errors(#"{"ops":{"listen":"\#(bad)"},"instances":[\#(validInstance)]}"#), [
                "ops.listen: must be an IP address and port such as 127.0.0.1:9090 or [::1]:9090, got \"\(bad)\"",
            ], bad)
        }
        XCTAssertEqual(errors(#"{"listen":{"port":8080},"ops":{"listen":"127.0.0.1:8080"},"instances":[\#(validInstance)]}"#),
                       ["ops.listen: must use another port than listen.port (8080)"])
        XCTAssertEqual(errors(#"{"ops":{"token":"too-short"},"instances":[\#(validInstance)]}"#), [
            "ops.token: the secret must be at least 32 bytes; generate one with `head -c 32 /dev/urandom | base64`",
        ])
        XCTAssertEqual(errors(#"{"ops":{"token":"x","tokenEnv":"Y"},"instances":[\#(validInstance)]}"#),
                       ["ops.token: give only one of token, tokenEnv or tokenFile"])
    }

    func testStorageOutageSettingsHaveDefaultsAndBounds() throws {
        let defaults = try parse(#"{"instances":[\#(validInstance)]}"#).0.storage
        XCTAssertEqual(defaults.outageLogIntervalSeconds, 60)
        XCTAssertEqual(defaults.outageRetryAfterSeconds, 30)
        let set = try parse(#"{"storage":{"outageLogIntervalSeconds":5,"outageRetryAfterSeconds":120},"instances":[\#(validInstance)]}"#).0
        XCTAssertEqual(set.storage.outageLogIntervalSeconds, 5)
        XCTAssertEqual(set.storage.outageRetryAfterSeconds, 120)
        XCTAssertEqual(Set(errors(#"{"storage":{"outageLogIntervalSeconds":0,"outageRetryAfterSeconds":3601},"instances":[\#(validInstance)]}"#)), [
            "storage.outageLogIntervalSeconds: must be between 1 and 86400, got 0",
            "storage.outageRetryAfterSeconds: must be between 1 and 3600, got 3601",
        ])
    }

    func testRejectsTwoSecretSources() {
        let json = #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","secretKeyEnv":"X"}]}"#
        XCTAssertEqual(errors(json), ["instances[0].secretKey: give only one of secretKey, secretKeyEnv or secretKeyFile"])
    }

    func testPartialAPNsCredentialsAreAnError() {
        let json = #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","apns":{"teamId":"ABCDE12345","topic":"com.example.app"}}]}"#
        XCTAssertEqual(Set(errors(json)), [
            "instances[0].apns.keyId: is required when teamId or keyPath is set",
            "instances[0].apns.keyPath: is required when teamId or keyId is set",
        ])
    }

    func testUnknownKeysAreWarningsNotErrors() throws {
        let (_, warnings) = try parse(#"{"listen":{"prot":1},"instances":[\#(validInstance)]}"#)
        XCTAssertTrue(warnings.contains(ConfigIssue("listen.prot", "unknown key (ignored)", severity: .warning)))
    }
}
