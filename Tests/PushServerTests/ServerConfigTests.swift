import HTTPClient
import PushStore
import XCTest

@testable import PublishEngine
@testable import PushServer
@testable import SQLiteStore

final class ServerConfigTests: XCTestCase {
    private let validInstance =
        #"{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef"}"#

    private func parse(_ json: String, env: [String: String] = [:]) throws(ConfigError) -> (
        ServerConfig, warnings: [ConfigIssue]
    ) {
        try ServerConfig.parse(Data(json.utf8), environment: env)
    }

    private func errors(_ json: String, env: [String: String] = [:]) -> [String] {
        configErrors { _ = try parse(json, env: env) }
    }

    func testExampleConfigLoadsWithoutAppleKey() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../config.example.json"
        ).path
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
        let json =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","apns":{"teamId":"ABCDE12345","keyId":"KEY1234567","keyPath":"/nonexistent/AuthKey.p8","topic":"com.example.app"}}]}"#
        XCTAssertEqual(errors(json), ["instances[0].apns.keyPath: file not found (/nonexistent/AuthKey.p8)"])
    }

    func testReportsEveryProblemAtOnce() {
        let json =
            #"{"listen":{"port":70000,"host":""},"log":{"level":"loud"},"storage":{"synchronous":"maybe"},"instances":[{"id":"not-a-uuid"}]}"#
        XCTAssertEqual(
            Set(errors(json)),
            [
                "listen.host: must not be empty",
                "listen.port: must be between 0 and 65535, got 70000",
                "log.level: must be one of trace, debug, info, notice, warning, error, critical",
                "storage.synchronous: must be \"normal\" or \"full\", got \"maybe\"",
                "instances[0].id: must be a UUID (Beams instance ids are UUIDs; the iOS SDK rejects others)",
                "instances[0].secretKey: one of secretKey, secretKeyEnv or secretKeyFile is required",
            ])
    }

    func testRejectsWrongTypesAndFractions() {
        XCTAssertEqual(
            errors(#"{"listen":{"port":"80"},"instances":[\#(validInstance)]}"#),
            ["listen.port: must be an integer, got string"])
        XCTAssertEqual(
            errors(#"{"listen":{"port":80.5},"instances":[\#(validInstance)]}"#),
            ["listen.port: must be an integer, got a fraction"])
        XCTAssertEqual(errors(#"{"instances":{}}"#), ["instances: must be an array"])
        XCTAssertEqual(errors("{"), ["$: not valid JSON"])
    }

    func testRejectsDuplicateInstanceIdsCaseInsensitively() {
        let upper = validInstance.replacingOccurrences(of: "8a0c5c1e", with: "8A0C5C1E")
        XCTAssertEqual(
            errors(#"{"instances":[\#(validInstance),\#(upper)]}"#),
            ["instances[1].id: duplicate instance id 8A0C5C1E-4b1e-4f4e-9d55-2f6f8b2b7c11"])
    }

    func testReadsSecretFromEnvironmentOrFileAndTrimsNewline() throws {
        let env = #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKeyEnv":"PUSH_SECRET"}]}"#
        XCTAssertEqual(
            try parse(env, env: ["PUSH_SECRET": "from-env-0123456789abcdef0123456789\n"]).0.instances[0].secretKey,
            "from-env-0123456789abcdef0123456789")
        XCTAssertEqual(errors(env), ["instances[0].secretKeyEnv: environment variable PUSH_SECRET is not set"])

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("from-file-0123456789abcdef0123456789\n".utf8).write(to: dir.appendingPathComponent("secret"))
        let file =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKeyFile":"${CREDENTIALS_DIRECTORY}/secret"}]}"#
        XCTAssertEqual(
            try parse(file, env: ["CREDENTIALS_DIRECTORY": dir.path]).0.instances[0].secretKey,
            "from-file-0123456789abcdef0123456789")
    }

    func testRejectsSecretsShorterThan32Bytes() throws {
        let short = validInstance.replacingOccurrences(
            of: "0123456789abcdef0123456789abcdef", with: "0123456789abcdef0123456789abcde")
        XCTAssertEqual(
            errors(#"{"instances":[\#(short)]}"#),
            [
                "instances[0].secretKey: the secret must be at least 32 bytes; generate one with `head -c 32 /dev/urandom | base64`"
            ])
        let env = #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKeyEnv":"PUSH_SECRET"}]}"#
        XCTAssertEqual(
            errors(env, env: ["PUSH_SECRET": "short-secret\n"]),
            [
                "instances[0].secretKeyEnv: the secret must be at least 32 bytes; generate one with `head -c 32 /dev/urandom | base64`"
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
        let inline = try parse(
            #"{"ops":{"listen":"127.0.0.1:9090","token":"\#(token)"},"instances":[\#(validInstance)]}"#
        ).0
        XCTAssertEqual(inline.ops.listen, ServerConfig.Endpoint(host: "127.0.0.1", port: 9090))
        XCTAssertEqual(inline.ops.token, token)
        let v6 = try parse(
            #"{"ops":{"listen":"[::1]:0","tokenEnv":"OPS"},"instances":[\#(validInstance)]}"#,
            env: ["OPS": token + "\n"]
        ).0
        XCTAssertEqual(v6.ops.listen, ServerConfig.Endpoint(host: "::1", port: 0))
        XCTAssertEqual(v6.ops.token, token)
    }

    func testRejectsBadOpsListenerAndShortOrDoubleToken() {
        for bad in [
            "localhost:9090", "127.0.0.1", "127.0.0.1:70000", "::1:9090", "[::1]9090", "127.0.0.1:+80",
            "[127.0.0.1]:80",
        ] {
            XCTAssertEqual(
                errors(#"{"ops":{"listen":"\#(bad)"},"instances":[\#(validInstance)]}"#),
                [
                    "ops.listen: must be an IP address and port such as 127.0.0.1:9090 or [::1]:9090, got \"\(bad)\""
                ], bad)
        }
        XCTAssertEqual(
            errors(#"{"listen":{"port":8080},"ops":{"listen":"127.0.0.1:8080"},"instances":[\#(validInstance)]}"#),
            ["ops.listen: must use another port than listen.port (8080)"])
        XCTAssertEqual(
            errors(#"{"ops":{"token":"too-short"},"instances":[\#(validInstance)]}"#),
            [
                "ops.token: the secret must be at least 32 bytes; generate one with `head -c 32 /dev/urandom | base64`"
            ])
        XCTAssertEqual(
            errors(#"{"ops":{"token":"x","tokenEnv":"Y"},"instances":[\#(validInstance)]}"#),
            ["ops.token: give only one of token, tokenEnv or tokenFile"])
    }

    func testStorageOutageSettingsHaveDefaultsAndBounds() throws {
        let defaults = try parse(#"{"instances":[\#(validInstance)]}"#).0.storage
        XCTAssertEqual(defaults.outageLogIntervalSeconds, 60)
        XCTAssertEqual(defaults.outageRetryAfterSeconds, 30)
        let set = try parse(
            #"{"storage":{"outageLogIntervalSeconds":5,"outageRetryAfterSeconds":120},"instances":[\#(validInstance)]}"#
        ).0
        XCTAssertEqual(set.storage.outageLogIntervalSeconds, 5)
        XCTAssertEqual(set.storage.outageRetryAfterSeconds, 120)
        XCTAssertEqual(
            Set(
                errors(
                    #"{"storage":{"outageLogIntervalSeconds":0,"outageRetryAfterSeconds":3601},"instances":[\#(validInstance)]}"#
                )),
            [
                "storage.outageLogIntervalSeconds: must be between 1 and 86400, got 0",
                "storage.outageRetryAfterSeconds: must be between 1 and 3600, got 3601",
            ])
    }

    func testTheSQLiteCacheHasADefaultAndBoundsAndReachesTheWriter() async throws {
        XCTAssertEqual(try parse(#"{"instances":[\#(validInstance)]}"#).0.storage.sqliteCacheMiB, 64)
        var storage = try parse(#"{"storage":{"sqliteCacheMiB":8},"instances":[\#(validInstance)]}"#).0.storage
        XCTAssertEqual(storage.sqliteCacheMiB, 8)
        XCTAssertEqual(
            errors(#"{"storage":{"sqliteCacheMiB":0},"instances":[\#(validInstance)]}"#),
            ["storage.sqliteCacheMiB: must be between 1 and 4096, got 0"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        storage.path = directory.appendingPathComponent("push.sqlite").path
        let opened = try await Application.openStore(storage, logger: .disabled, healthEvents: { _ in })
        let store = try XCTUnwrap(opened as? SQLitePushStore)
        let pages = try await store.write { try $0.first("PRAGMA cache_size") { $0.int64(0) } }
        XCTAssertEqual(pages, -8 * 1024, "negative: KiB")
        try await store.close()
    }

    func testUndeliveredDeviceExpiryIsOffByDefaultAndRefusedOnPostgreSQL() throws {
        XCTAssertEqual(try parse(#"{"instances":[\#(validInstance)]}"#).0.storage.undeliveredDeviceDays, 0)
        XCTAssertEqual(
            try parse(#"{"storage":{"undeliveredDeviceDays":0},"instances":[\#(validInstance)]}"#).0
                .storage.undeliveredDeviceDays, 0)
        XCTAssertEqual(
            errors(#"{"storage":{"undeliveredDeviceDays":-1},"instances":[\#(validInstance)]}"#),
            ["storage.undeliveredDeviceDays: must be between 0 and 36500, got -1"])
        XCTAssertEqual(
            try parse(#"{"storage":{"undeliveredDeviceDays":90},"instances":[\#(validInstance)]}"#).0
                .storage.undeliveredDeviceDays, 90)
        // Sharded successes are counters only on PostgreSQL: every delivered device would look undelivered.
        XCTAssertEqual(
            errors(
                #"{"storage":{"backend":"postgresql","postgresql":{"connectionString":"host=db"},"undeliveredDeviceDays":90},"instances":[\#(validInstance)]}"#
            ),
            [
                "storage.undeliveredDeviceDays: is not available on the postgresql backend: successes of sharded "
                    + "publishes are not recorded per device, so a device delivered to cannot be told from one never "
                    + "delivered to; leave it at 0"
            ])
    }

    func testStorageBackendDefaultsToSQLiteAndReadsPostgreSQLFromEverySecretSource() throws {
        let defaults = try parse(#"{"instances":[\#(validInstance)]}"#).0.storage
        XCTAssertEqual(defaults.backend, .sqlite)
        XCTAssertNil(defaults.postgresql)

        let inline = try parse(
            #"{"storage":{"backend":"postgresql","postgresql":{"connectionString":"host=db dbname=push password=s3cret","poolSize":8}},"instances":[\#(validInstance)]}"#
        ).0.storage
        XCTAssertEqual(inline.backend, .postgresql)
        XCTAssertEqual(inline.postgresql?.connectionString, "host=db dbname=push password=s3cret")
        XCTAssertEqual(inline.postgresql?.poolSize, 8)
        XCTAssertFalse(String(describing: inline.postgresql).contains("s3cret"), "the password is never printed")

        let fromEnv = try parse(
            #"{"storage":{"backend":"postgresql","postgresql":{"connectionStringEnv":"PG_DSN"}},"instances":[\#(validInstance)]}"#,
            env: ["PG_DSN": "postgresql://push@db/push?sslmode=verify-full\n"]
        ).0.storage
        XCTAssertEqual(fromEnv.postgresql?.connectionString, "postgresql://push@db/push?sslmode=verify-full")
        XCTAssertEqual(fromEnv.postgresql?.poolSize, 4)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("dsn-\(UUID().uuidString)")
        try Data("host=db dbname=push\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try parse(
            #"{"storage":{"backend":"postgresql","postgresql":{"connectionStringFile":"\#(file.path)"}},"instances":[\#(validInstance)]}"#
        ).0.storage
        XCTAssertEqual(fromFile.postgresql?.connectionString, "host=db dbname=push")
    }

    func testStorageBackendErrorsNameTheField() throws {
        XCTAssertEqual(
            errors(#"{"storage":{"backend":"mysql"},"instances":[\#(validInstance)]}"#),
            [#"storage.backend: must be "sqlite" or "postgresql", got "mysql""#])
        XCTAssertEqual(
            errors(#"{"storage":{"backend":"postgresql"},"instances":[\#(validInstance)]}"#),
            [
                #"storage.postgresql: is required when storage.backend is "postgresql" (give connectionString, connectionStringEnv or connectionStringFile)"#
            ])
        XCTAssertEqual(
            errors(
                #"{"storage":{"backend":"postgresql","postgresql":{"poolSize":2}},"instances":[\#(validInstance)]}"#),
            [
                "storage.postgresql.connectionString: one of connectionString, connectionStringEnv or connectionStringFile is required"
            ])
        XCTAssertEqual(
            Set(
                errors(
                    #"{"storage":{"backend":"postgresql","postgresql":{"connectionStringEnv":"NOPE","poolSize":0}},"instances":[\#(validInstance)]}"#
                )),
            [
                "storage.postgresql.poolSize: must be between 1 and 64, got 0",
                "storage.postgresql.connectionStringEnv: environment variable NOPE is not set",
            ])
        let broken = errors(
            #"{"storage":{"backend":"postgresql","postgresql":{"connectionString":"host=db password"}},"instances":[\#(validInstance)]}"#
        )
        XCTAssertEqual(broken.count, 1)
        XCTAssertTrue(
            broken.first?.hasPrefix("storage.postgresql.connectionString: is not a valid libpq connection string")
                ?? false, "\(broken)")
        XCTAssertFalse(broken.joined().contains("password"), "libpq's message, which quotes the string, is not shown")
        // A PostgreSQL section beside the SQLite backend is ignored, with a warning.
        let (sqlite, warnings) = try parse(
            #"{"storage":{"postgresql":{"connectionString":"host=db"}},"instances":[\#(validInstance)]}"#)
        XCTAssertEqual(sqlite.storage.backend, .sqlite)
        XCTAssertTrue(warnings.contains { $0.path == "storage.postgresql" }, "\(warnings)")
    }

    func testPostgreSQLShardSizeDefaultsTo10000AcceptsZeroAndRejectsTinyOrHugeSizes() throws {
        let base =
            #"{"storage":{"backend":"postgresql","postgresql":{"connectionString":"host=db"SHARD}},"instances":[\#(validInstance)]}"#
        func config(_ shard: String) -> String { base.replacingOccurrences(of: "SHARD", with: shard) }
        XCTAssertEqual(try parse(config("")).0.storage.postgresql?.shardSize, 10_000)
        XCTAssertEqual(try parse(config(#","shardSize":0"#)).0.storage.postgresql?.shardSize, 0)
        XCTAssertEqual(try parse(config(#","shardSize":2500"#)).0.storage.postgresql?.shardSize, 2500)
        XCTAssertEqual(
            errors(config(#","shardSize":99"#)),
            ["storage.postgresql.shardSize: must be 0 (deliver every publish whole) or at least 100, got 99"])
        XCTAssertEqual(
            errors(config(#","shardSize":10000001"#)),
            ["storage.postgresql.shardSize: must be between 0 and 10000000, got 10000001"])
        XCTAssertEqual(
            errors(config(#","shardSize":"big""#)), ["storage.postgresql.shardSize: must be an integer, got string"])
    }

    func testRejectsTwoSecretSources() {
        let json =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","secretKeyEnv":"X"}]}"#
        XCTAssertEqual(
            errors(json), ["instances[0].secretKey: give only one of secretKey, secretKeyEnv or secretKeyFile"])
    }

    func testPartialAPNsCredentialsAreAnError() {
        let json =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","apns":{"teamId":"ABCDE12345","topic":"com.example.app"}}]}"#
        XCTAssertEqual(
            Set(errors(json)),
            [
                "instances[0].apns.keyId: is required when teamId or keyPath is set",
                "instances[0].apns.keyPath: is required when teamId or keyId is set",
            ])
    }

    func testWebhookDefaultsAllowNoPrivateDestinations() throws {
        let (config, _) = try parse(#"{"instances":[\#(validInstance)]}"#)
        XCTAssertEqual(config.webhooks.allowedDestinations, [])
        XCTAssertEqual(config.webhooks.timeoutSeconds, 3)
        XCTAssertEqual(config.webhooks.connectTimeoutSeconds, 2)
        XCTAssertEqual(config.webhooks.maxResponseBytes, 65536)
        XCTAssertEqual(config.webhooks.client.policy, DestinationPolicy())
    }

    func testReadsWebhookAllowancesAndLimits() throws {
        let json =
            #"{"webhooks":{"allowedDestinations":["127.0.0.1","10.0.0.0/8","fd00::/8","Hooks.Internal"],"timeoutSeconds":5,"connectTimeoutSeconds":1,"maxResponseBytes":4096},"instances":[\#(validInstance)]}"#
        let webhooks = try parse(json).0.webhooks
        XCTAssertEqual(
            webhooks.allowedDestinations.map(\.description),
            ["127.0.0.1/32", "10.0.0.0/8", "fd00::/8", "hooks.internal"])
        XCTAssertEqual(webhooks.client.timeout, .seconds(5))
        XCTAssertEqual(webhooks.client.connectTimeout, .seconds(1))
        XCTAssertEqual(webhooks.client.maxResponseBytes, 4096)
    }

    func testNamesEachBadWebhookAllowanceAndLimit() {
        let json =
            #"{"webhooks":{"allowedDestinations":["10.1.0.0/8","10.0.0.0/33","bad host",7],"timeoutSeconds":2,"connectTimeoutSeconds":5,"maxResponseBytes":10},"instances":[\#(validInstance)]}"#
        XCTAssertEqual(
            Set(errors(json)),
            [
                "webhooks.allowedDestinations[0]: \"10.1.0.0/8\" has bits set after the prefix (did you mean 10.0.0.0/8?)",
                "webhooks.allowedDestinations[1]: \"10.0.0.0/33\" the prefix length must be an integer from 0 to 32",
                "webhooks.allowedDestinations[2]: \"bad host\" must be an IP address, a CIDR network (10.0.0.0/8) or a host name (letters, digits, '-' and '.')",
                "webhooks.allowedDestinations[3]: must be a string, got number",
                "webhooks.connectTimeoutSeconds: must not exceed timeoutSeconds (2)",
                "webhooks.maxResponseBytes: must be between 1024 and 16777216, got 10",
            ])
        XCTAssertEqual(
            errors(#"{"webhooks":{"allowedDestinations":"127.0.0.1"},"instances":[\#(validInstance)]}"#),
            ["webhooks.allowedDestinations: must be an array of strings, got string"])
    }

    func testReadsTheWebhookSchedulingAndWebPushSenderKeysWithTheirDefaults() throws {
        let (defaults, _) = try parse(#"{"instances":[\#(validInstance)]}"#)
        XCTAssertEqual(
            defaults.webhooks.scheduler,
            WebhookScheduler<PendingWebhook>.Settings(
                concurrency: 32, perDestination: 4, heldPerDestination: 16, breakerThreshold: 3, breakerOpenSeconds: 30)
        )
        XCTAssertEqual(defaults.webPush.maxInFlight, 1024)
        XCTAssertEqual(defaults.webPush.maxInFlightPerService, 256)
        XCTAssertEqual(defaults.webPush.connectTimeoutSeconds, 3)
        XCTAssertEqual(defaults.webPush.unreachableAfterFailures, 3)
        XCTAssertEqual(defaults.webPush.unreachableAfterSeconds, 3600)
        let json =
            #"{"webhooks":{"concurrency":8,"maxConcurrentPerDestination":2,"circuitBreakerTimeouts":5,"circuitBreakerSeconds":60},"webPush":{"maxInFlight":64,"maxInFlightPerService":16,"connectTimeoutSeconds":2,"unreachableAfterFailures":4,"unreachableAfterSeconds":0},"instances":[\#(validInstance)]}"#
        let config = try parse(json).0
        XCTAssertEqual(
            config.webhooks.scheduler,
            WebhookScheduler<PendingWebhook>.Settings(
                concurrency: 8, perDestination: 2, heldPerDestination: 8, breakerThreshold: 5, breakerOpenSeconds: 60))
        XCTAssertEqual(config.webPush.maxInFlight, 64)
        XCTAssertEqual(config.webPush.maxInFlightPerService, 16)
        XCTAssertEqual(config.webPush.connectTimeoutSeconds, 2)
        XCTAssertEqual(config.webPush.unreachableAfterFailures, 4)
        XCTAssertEqual(config.webPush.unreachableAfterSeconds, 0)
        XCTAssertEqual(
            errors(#"{"webPush":{"maxInFlight":10,"maxInFlightPerService":20},"instances":[\#(validInstance)]}"#),
            ["webPush.maxInFlightPerService: must not exceed maxInFlight (10)"])
    }

    func testInstanceWebhookNeedsAnHTTPURLAndASecret() {
        func instance(_ webhook: String) -> String {
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","webhook":\#(webhook)}]}"#
        }
        XCTAssertEqual(
            errors(instance(#"{"url":"https://hooks.example.com/beams"}"#)),
            ["instances[0].webhook.secret: one of secret, secretEnv or secretFile is required"])
        XCTAssertEqual(
            errors(instance(#"{"url":"ftp://hooks.example.com/","secret":"0123456789abcdef"}"#)),
            ["instances[0].webhook.url: must be an http or https URL"])
        XCTAssertEqual(errors(instance(#"{"secret":"0123456789abcdef"}"#)), ["instances[0].webhook.url: is required"])
        XCTAssertEqual(
            errors(instance(#"{"url":"http://exa mple/","secret":"0123456789abcdef","secretEnv":"X"}"#)).count, 2)
        XCTAssertEqual(
            errors(instance(#"{"url":"https://h.example/","secret":"  "}"#)),
            ["instances[0].webhook.secret: the secret is empty"])
        XCTAssertEqual(
            errors(instance(#"{"url":"http://[::1]:8080/hooks","secret":"0123456789abcdef"}"#)),
            [
                "instances[0].webhook.url: ::1 is loopback (::1/128): list it in webhooks.allowedDestinations to send webhooks there"
            ])
    }

    func testInstanceWebhookToAnAllowedLiteralAddressLoads() throws {
        let json =
            #"{"webhooks":{"allowedDestinations":["10.0.0.0/8"]},"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","webhook":{"url":"http://10.1.2.3/hooks","secret":"0123456789abcdef"}}]}"#
        XCTAssertEqual(try parse(json).0.instances[0].webhook?.url, "http://10.1.2.3/hooks")
        XCTAssertEqual(
            errors(json.replacingOccurrences(of: "10.0.0.0/8", with: "10.0.0.0/16")),
            [
                "instances[0].webhook.url: 10.1.2.3 is private (10.0.0.0/8): list it in webhooks.allowedDestinations to send webhooks there"
            ])
    }

    func testReadsInstanceWebhookSecretFromEnvironmentOrFile() throws {
        let env =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","webhook":{"url":"https://h.example/x","secretEnv":"HOOK_SECRET"}}]}"#
        XCTAssertEqual(
            try parse(env, env: ["HOOK_SECRET": "whsec-from-env-0123\n"]).0.instances[0].webhook?.secret,
            "whsec-from-env-0123")
        XCTAssertEqual(errors(env), ["instances[0].webhook.secretEnv: environment variable HOOK_SECRET is not set"])

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("whsec-from-file-0123\n".utf8).write(to: dir.appendingPathComponent("hook"))
        let file =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","webhook":{"url":"https://h.example/x","secretFile":"${CREDENTIALS_DIRECTORY}/hook"}}]}"#
        let hook = try XCTUnwrap(try parse(file, env: ["CREDENTIALS_DIRECTORY": dir.path]).0.instances[0].webhook)
        XCTAssertEqual(hook.secret, "whsec-from-file-0123")
        XCTAssertEqual(hook.url, "https://h.example/x")
        XCTAssertEqual(
            errors(file, env: ["CREDENTIALS_DIRECTORY": "/nonexistent"]),
            ["instances[0].webhook.secretFile: file not found (/nonexistent/hook)"])
    }

    func testUnsetCredentialsDirectoryIsNamedInsteadOfThePathItsEmptyExpansionGives() {
        // check-config run by hand: systemd sets CREDENTIALS_DIRECTORY only for the service.
        let file =
            #"{"listen":{"tls":{"certificatePath":"${CREDENTIALS_DIRECTORY}/tls-cert.pem","privateKeyPath":"${CREDENTIALS_DIRECTORY}/tls-key.pem"}},"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKeyFile":"${CREDENTIALS_DIRECTORY}/instance-secret"}]}"#
        XCTAssertEqual(
            errors(file),
            [
                #"instances[0].secretKeyFile: ${CREDENTIALS_DIRECTORY} is not set (the path would be "/instance-secret")"#,
                #"listen.tls.certificatePath: ${CREDENTIALS_DIRECTORY} is not set (the path would be "/tls-cert.pem")"#,
                #"listen.tls.privateKeyPath: ${CREDENTIALS_DIRECTORY} is not set (the path would be "/tls-key.pem")"#,
            ])
        do {
            _ = try parse(file)
            XCTFail("an unset CREDENTIALS_DIRECTORY must fail the config")
        } catch {
            XCTAssertEqual(error.unsetVariables, ["CREDENTIALS_DIRECTORY"])
            XCTAssertNotNil(CheckConfigCommand.hint(error, path: "/etc/push-server/config.json"))
        }
        // Set, but the files are not there: each file is named, and no hint about the variable.
        XCTAssertEqual(errors(file, env: ["CREDENTIALS_DIRECTORY": "/nonexistent"]).count, 3)
        XCTAssertTrue(
            errors(file, env: ["CREDENTIALS_DIRECTORY": "/nonexistent"]).allSatisfy { $0.contains("(/nonexistent/") })
        // A variable in a field that has no error (an inline secret is not expanded) is left alone.
        let inline =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"${NOT_EXPANDED}0123456789abcdef0123456789abcdef"}]}"#
        XCTAssertEqual(errors(inline), [])
    }

    func testUnknownKeysAreWarningsNotErrors() throws {
        let (_, warnings) = try parse(#"{"listen":{"prot":1},"instances":[\#(validInstance)]}"#)
        XCTAssertTrue(warnings.contains(ConfigIssue("listen.prot", "unknown key (ignored)", severity: .warning)))
    }

    func testAbuseLimitsHaveTheirDocumentedDefaults() throws {
        let limits = try parse(#"{"instances":[\#(validInstance)]}"#).0.limits
        XCTAssertEqual(limits.ipRequestsPerSecond, 50)
        XCTAssertEqual(limits.ipBurst, 500)
        XCTAssertEqual(limits.ipInterestsPerSecond, 100)
        XCTAssertEqual(limits.deviceRequestsPerSecondPerInstance, 5000)
        XCTAssertEqual(limits.reportsPerSecondPerInstance, 5000)
        XCTAssertEqual(limits.maxDevicesPerInstance, 1_000_000)
        XCTAssertEqual(limits.maxSubscriptionsPerInstance, 10_000_000)
        XCTAssertEqual(limits.maxInterestsPerInstance, 1_000_000)
        XCTAssertEqual(limits.maxTrackedClients, 100_000)
        XCTAssertEqual(limits.authFailuresPerIP, 10)
        XCTAssertEqual(limits.authFailureWindowSeconds, 60)
        XCTAssertEqual(limits.authLockoutSeconds, 300)
        XCTAssertEqual(limits.trustedProxies, [])
    }

    func testReadsAbuseLimitsAndCanonicalTrustedProxies() throws {
        let json = #"""
            {"limits":{"ipRequestsPerSecond":0,"ipBurst":7,"ipInterestsPerSecond":11,"deviceRequestsPerSecondPerInstance":0,
                       "reportsPerSecondPerInstance":9,"maxDevicesPerInstance":3,"maxTrackedClients":1000,
                       "maxSubscriptionsPerInstance":40,"maxInterestsPerInstance":4,
                       "authFailuresPerIP":0,"authFailureWindowSeconds":5,"authLockoutSeconds":6,
                       "trustedProxies":["127.0.0.1","0:0::1"]},
             "instances":[\#(validInstance)]}
            """#
        let limits = try parse(json).0.limits
        XCTAssertEqual(limits.ipRequestsPerSecond, 0, "0 turns the limit off")
        XCTAssertEqual(limits.ipBurst, 7)
        XCTAssertEqual(limits.ipInterestsPerSecond, 11)
        XCTAssertEqual(limits.deviceRequestsPerSecondPerInstance, 0)
        XCTAssertEqual(limits.reportsPerSecondPerInstance, 9)
        XCTAssertEqual(limits.maxDevicesPerInstance, 3)
        XCTAssertEqual(
            limits.interestLimits, InterestLimits(maxSubscriptionsPerInstance: 40, maxInterestsPerInstance: 4))
        XCTAssertEqual(limits.maxTrackedClients, 1000)
        XCTAssertEqual(limits.authFailuresPerIP, 0)
        XCTAssertEqual(limits.authFailureWindowSeconds, 5)
        XCTAssertEqual(limits.authLockoutSeconds, 6)
        XCTAssertEqual(limits.trustedProxies, ["127.0.0.1", "::1"])
    }

    func testAbuseLimitErrorsNameTheField() {
        let json = #"""
            {"limits":{"ipBurst":0,"maxDevicesPerInstance":0,"maxTrackedClients":10,"authLockoutSeconds":0,
                       "maxSubscriptionsPerInstance":0,"maxInterestsPerInstance":-1,
                       "trustedProxies":["10.0.0.0/8","::1",5]},
             "instances":[\#(validInstance)]}
            """#
        XCTAssertEqual(
            Set(errors(json)),
            [
                "limits.ipBurst: must be between 1 and 10000000, got 0",
                "limits.maxDevicesPerInstance: must be between 1 and 1000000000, got 0",
                "limits.maxSubscriptionsPerInstance: must be between 1 and 1000000000, got 0",
                "limits.maxInterestsPerInstance: must be between 1 and 1000000000, got -1",
                "limits.maxTrackedClients: must be between 1000 and 10000000, got 10",
                "limits.authLockoutSeconds: must be between 1 and 86400, got 0",
                "limits.trustedProxies[0]: must be an IPv4 or IPv6 address, got \"10.0.0.0/8\"",
                "limits.trustedProxies[2]: must be an IPv4 or IPv6 address, got 5",
            ])
        XCTAssertEqual(
            errors(#"{"limits":{"trustedProxies":"127.0.0.1"},"instances":[\#(validInstance)]}"#),
            ["limits.trustedProxies: must be an array of IP addresses, got string"])
    }

    func testConnectionAndBodyBudgetLimitsHaveTheirDocumentedDefaultsAndAreRead() throws {
        let defaults = try parse(#"{"instances":[\#(validInstance)]}"#).0.limits
        XCTAssertEqual(defaults.maxConnectionsPerAddress, 128)
        XCTAssertEqual(defaults.maxBodyBytesInFlight, 64 << 20)
        XCTAssertEqual(defaults.idleTimeoutUnderPressureSeconds, 5)
        let json = #"""
            {"limits":{"maxConnectionsPerAddress":0,"maxBodyBytesInFlight":2097152,"idleTimeoutUnderPressureSeconds":2},
             "instances":[\#(validInstance)]}
            """#
        let limits = try parse(json).0.limits
        XCTAssertEqual(limits.maxConnectionsPerAddress, 0, "0 turns the limit off")
        XCTAssertEqual(limits.maxBodyBytesInFlight, 2 << 20)
        XCTAssertEqual(limits.idleTimeoutUnderPressureSeconds, 2)
    }

    func testConnectionAndBodyBudgetErrorsNameTheField() {
        let json = #"""
            {"limits":{"maxConnectionsPerAddress":-1,"maxBodyBytesInFlight":1000,"idleTimeoutUnderPressureSeconds":0},
             "instances":[\#(validInstance)]}
            """#
        XCTAssertEqual(
            Set(errors(json)),
            [
                "limits.maxConnectionsPerAddress: must be between 0 and 1000000, got -1",
                "limits.maxBodyBytesInFlight: must be between 1048576 and 17179869184, got 1000",
                "limits.idleTimeoutUnderPressureSeconds: must be between 1 and 86400, got 0",
            ])
        XCTAssertEqual(
            errors(
                #"{"limits":{"maxBodyBytes":4194304,"maxBodyBytesInFlight":2097152},"instances":[\#(validInstance)]}"#),
            [
                "limits.maxBodyBytesInFlight: must be at least maxBodyBytes (4194304), or no request of that size could pass"
            ])
    }
}
