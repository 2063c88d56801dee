import Foundation
import PushServer
import XCTest

/// `ServerConfig.exposureIssues` and `exposureVerdict` on real files: which modes and groups count, systemd's
/// credentials directory, inline secrets, shared and example secrets, and the loopback rule.
final class ServerConfigExposureTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("exposure-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func file(_ name: String, _ text: String, mode: Int, in folder: URL? = nil) throws -> String {
        let url = (folder ?? directory).appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        return url.path
    }

    /// Loads a config whose instances read their secrets from `secrets` (file paths), plus `extra` JSON members.
    private func load(secrets: [String], host: String = "0.0.0.0", extra: String = "", configMode: Int = 0o600)
        throws -> (ServerConfig, String)
    {
        let ids = ["8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11", "3d2f6b0a-5c4e-4b7a-9e1d-0f2a3b4c5d6e"]
        let instances = zip(ids, secrets).map { #"{"id":"\#($0)","secretKeyFile":"\#($1)"}"# }.joined(separator: ",")
        let json = #"{"listen":{"host":"\#(host)"},\#(extra)"instances":[\#(instances)]}"#
        let path = try file("config.json", json, mode: configMode)
        return (try ServerConfig.load(path: path, environment: [:]).0, path)
    }

    private func secret(_ n: Int, mode: Int = 0o600) throws -> String {
        try file("secret-\(n)", "instance-\(n)-secret-0123456789abcdef0123456789\n", mode: mode)
    }

    func testPrivateFilesAndDistinctSecretsRaiseNothing() throws {
        let (config, path) = try load(secrets: [try secret(0), try secret(1)])
        XCTAssertEqual(config.exposureIssues(configPath: path, environment: [:], serviceGroup: getegid()), [])
    }

    func testAWorldReadableOrForeignGroupSecretFileIsNamedButTheServicesOwnGroupIsNot() throws {
        let (config, path) = try load(secrets: [try secret(0, mode: 0o644), try secret(1, mode: 0o640)])
        let own = config.exposureIssues(configPath: path, environment: [:], serviceGroup: getegid())
        XCTAssertEqual(own.map(\.path), ["instances[0].secretKeyFile"])
        XCTAssertTrue(own[0].message.contains("every user of this machine can read"), own[0].message)
        let foreign = config.exposureIssues(configPath: path, environment: [:], serviceGroup: getegid() &+ 4242)
        XCTAssertEqual(foreign.map(\.path), ["instances[0].secretKeyFile", "instances[1].secretKeyFile"])
        XCTAssertTrue(foreign[1].message.contains("group \(getegid()) can read"), foreign[1].message)
    }

    func testSystemdCredentialsAreNotJudgedByTheirMode() throws {
        let credentials = directory.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        let shown = try file(
            "instance-secret", "credential-secret-0123456789abcdef0123456789", mode: 0o440, in: credentials)
        let (config, path) = try load(secrets: [shown])
        XCTAssertEqual(
            config.exposureIssues(
                configPath: path, environment: ["CREDENTIALS_DIRECTORY": credentials.path],
                serviceGroup: getegid() &+ 1), [])
        // A sibling whose name merely starts like the directory is judged.
        let sibling = directory.appendingPathComponent("credentials-old")
        try FileManager.default.createDirectory(at: sibling, withIntermediateDirectories: true)
        let other = try file(
            "instance-secret", "credential-secret-0123456789abcdef0123456789", mode: 0o644, in: sibling)
        let (config2, path2) = try load(secrets: [other])
        XCTAssertEqual(
            config2.exposureIssues(configPath: path2, environment: ["CREDENTIALS_DIRECTORY": credentials.path])
                .map(\.path), ["instances[0].secretKeyFile"])
    }

    func testAnInlineSecretCountsOnlyInAReadableConfiguration() throws {
        let webhook =
            #""webhooks":{"allowedDestinations":["127.0.0.1"]},"ops":{"token":"ops-token-0123456789abcdef0123456789ab"},"#
        let (readable, path) = try load(secrets: [try secret(0)], extra: webhook, configMode: 0o644)
        XCTAssertEqual(readable.exposureIssues(configPath: path, environment: [:]).map(\.path), ["ops.token"])
        let (private_, privatePath) = try load(secrets: [try secret(0)], extra: webhook, configMode: 0o600)
        XCTAssertEqual(private_.exposureIssues(configPath: privatePath, environment: [:]), [])
    }

    func testSharedAndExampleSecretsAreNamed() throws {
        let example = try file("example", "example-secret-change-me-0123456789abcdef", mode: 0o600)
        let (config, path) = try load(secrets: [example, example])
        let issues = config.exposureIssues(configPath: path, environment: [:])
        XCTAssertEqual(issues.map(\.path), ["instances[0]", "instances[1]", "instances[1]"])
        XCTAssertTrue(issues[2].message.contains("same secret as instances[0]"), issues[2].message)
    }

    func testOnlyLoopbackTurnsTheIssuesIntoWarnings() throws {
        for (host, loopback) in [
            ("127.0.0.1", true), ("127.1.2.3", true), ("::1", true), ("localhost", true),
            ("0.0.0.0", false), ("::", false), ("10.0.0.1", false), ("127.0.0.1.example", false),
        ] {
            var config = ServerConfig()
            config.listen.host = host
            XCTAssertEqual(config.listensOnLoopbackOnly, loopback, host)
            let verdict = config.exposureVerdict([ConfigIssue("instances[0]", "x")])
            XCTAssertEqual(verdict.errors.count, loopback ? 0 : 1, host)
            XCTAssertEqual(verdict.warnings.map(\.severity), loopback ? [.warning] : [], host)
        }
    }

    func testAConnectionStringIsASecretOnlyWithAPassword() {
        XCTAssertTrue(ServerConfig.holdsPassword("host=db user=push password=s3cret dbname=push"))
        XCTAssertTrue(ServerConfig.holdsPassword("postgresql://push:s3cret@db.example/push"))
        XCTAssertFalse(ServerConfig.holdsPassword("postgresql://push@db.example/push"))
        XCTAssertFalse(ServerConfig.holdsPassword("host=/run/postgresql dbname=push"))
    }
}
