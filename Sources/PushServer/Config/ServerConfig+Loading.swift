import Foundation
import HTTPClient
import JSON
import Logging
import PushStore

extension ServerConfig {
    /// Reads and validates a config file.
    ///
    /// - Parameters:
    ///   - path: the JSON file.
    ///   - environment: for `secretKeyEnv` and `${VAR}` expansion in paths (systemd's `${CREDENTIALS_DIRECTORY}`).
    ///   - validateKey: checks that a `.p8` file holds a usable key; returns a problem description or nil.
    /// - Returns: the config and any warnings.
    /// - Throws: `ConfigError` listing every error (and the warnings) when there is at least one error.
    package static func load(
        path: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        validateKey: (String) -> String? = { _ in nil }
    ) throws(ConfigError) -> (ServerConfig, warnings: [ConfigIssue]) {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "file not found"
            throw ConfigError(issues: [ConfigIssue(path, reason)])
        }
        return try parse(
            data, baseDirectory: URL(fileURLWithPath: path).deletingLastPathComponent().path,
            environment: environment, validateKey: validateKey)
    }

    /// Parses config JSON; relative file paths inside it are resolved against `baseDirectory`'s caller cwd
    /// semantics (left relative: the process's working directory, as documented).
    package static func parse(
        _ data: Data,
        baseDirectory: String = ".",
        environment: [String: String] = ProcessInfo.processInfo.environment,
        validateKey: (String) -> String? = { _ in nil }
    ) throws(ConfigError) -> (ServerConfig, warnings: [ConfigIssue]) {
        var reader = ConfigReader()
        var config = ServerConfig()
        guard let document = JSONValue.parse(data) else {
            throw ConfigError(issues: [ConfigIssue("$", "not valid JSON")])
        }
        guard let root = document.objectValue else {
            throw ConfigError(issues: [ConfigIssue("$", "the top level must be a JSON object")])
        }
        reader.checkKeys(
            root, "",
            allowed: [
                "listen", "ops", "storage", "limits", "apns", "webPush", "engine", "webhooks",
                "log", "console", "keys", "instances", "tracing", "admin",
            ])
        let expand = { (value: String) in expandVariables(value, environment) }

        if let listen = reader.object(root["listen"], "listen") {
            reader.checkKeys(listen, "listen", allowed: ["host", "port", "tls", "eventLoops"])
            if let host = reader.string(listen, "host", "listen") {
                if host.isEmpty { reader.error("listen.host", "must not be empty") } else { config.listen.host = host }
            }
            reader.int(listen, "port", "listen", in: 0...65535, into: &config.listen.port)
            reader.int(listen, "eventLoops", "listen", in: 0...256, into: &config.listen.eventLoops)
            if let tls = reader.object(listen["tls"], "listen.tls") {
                reader.checkKeys(tls, "listen.tls", allowed: ["certificatePath", "privateKeyPath"])
                let cert = reader.string(tls, "certificatePath", "listen.tls").map(expand)
                let key = reader.string(tls, "privateKeyPath", "listen.tls").map(expand)
                if cert == nil { reader.error("listen.tls.certificatePath", "is required when tls is set") }
                if key == nil { reader.error("listen.tls.privateKeyPath", "is required when tls is set") }
                if let cert { checkReadable(cert, "listen.tls.certificatePath", &reader) }
                if let key { checkReadable(key, "listen.tls.privateKeyPath", &reader) }
                if let cert, let key { config.listen.tls = TLSFiles(certificatePath: cert, privateKeyPath: key) }
                if let key { reader.secret("listen.tls.privateKeyPath", file: key) }
            }
        }

        if let ops = reader.object(root["ops"], "ops") {
            reader.checkKeys(ops, "ops", allowed: ["listen", "token", "tokenEnv", "tokenFile"])
            if let text = reader.string(ops, "listen", "ops") {
                if let endpoint = parseEndpoint(text) {
                    if endpoint.port != 0 && endpoint.port == config.listen.port {
                        reader.error("ops.listen", "must use another port than listen.port (\(endpoint.port))")
                    } else {
                        config.ops.listen = endpoint
                    }
                } else {
                    reader.error(
                        "ops.listen",
                        "must be an IP address and port such as 127.0.0.1:9090 or [::1]:9090, got \"\(text)\"")
                }
            }
            config.ops.token = readSecret(ops, "ops", .opsToken, &reader, environment: environment)
        }

        if let storage = reader.object(root["storage"], "storage") {
            reader.checkKeys(
                storage, "storage",
                allowed: [
                    "path", "synchronous", "retentionDays", "undeliveredDeviceDays", "outageLogIntervalSeconds",
                    "outageRetryAfterSeconds", "backend", "postgresql", "sqliteCacheMiB", "invalidationRetentionDays",
                    "invalidationsPerInstance", "auditRetentionDays",
                ])
            readStorageBackend(storage, into: &config.storage, &reader, environment: environment)
            reader.int(storage, "retentionDays", "storage", in: 0...36500, into: &config.storage.retentionDays)
            reader.int(
                storage, "invalidationRetentionDays", "storage", in: 0...36500,
                into: &config.storage.invalidationRetentionDays)
            reader.int(
                storage, "auditRetentionDays", "storage", in: 0...36500, into: &config.storage.auditRetentionDays)
            reader.int(
                storage, "invalidationsPerInstance", "storage", in: 1...10_000_000,
                into: &config.storage.invalidationsPerInstance)
            if let days = reader.int(storage, "undeliveredDeviceDays", "storage", in: 0...36500) {
                // On PostgreSQL a sharded publish records its successes as counters only (docs/OPERATIONS.md,
                // "Results at scale"), so a device delivered to every day still shows no acceptance: the janitor
                // would delete live devices.
                if days > 0 && config.storage.backend == .postgresql {
                    reader.error(
                        "storage.undeliveredDeviceDays",
                        "is not available on the postgresql backend: "
                            + "successes of sharded publishes are not recorded per device, so a device delivered to "
                            + "cannot be told from one never delivered to; leave it at 0")
                } else {
                    config.storage.undeliveredDeviceDays = days
                }
            }
            reader.int(storage, "sqliteCacheMiB", "storage", in: 1...4096, into: &config.storage.sqliteCacheMiB)
            reader.int(
                storage, "outageLogIntervalSeconds", "storage", in: 1...86400,
                into: &config.storage.outageLogIntervalSeconds)
            reader.int(
                storage, "outageRetryAfterSeconds", "storage", in: 1...3600,
                into: &config.storage.outageRetryAfterSeconds)
            if let path = reader.string(storage, "path", "storage").map(expand) {
                if path.isEmpty {
                    reader.error("storage.path", "must not be empty")
                } else {
                    config.storage.path = path
                }
            }
            if let sync = reader.string(storage, "synchronous", "storage") {
                if let value = Synchronous(rawValue: sync.lowercased()) {
                    config.storage.synchronous = value
                } else {
                    reader.error("storage.synchronous", "must be \"normal\" or \"full\", got \"\(sync)\"")
                }
            }
        }

        if let limits = reader.object(root["limits"], "limits") {
            readLimits(limits, into: &config.limits, &reader)
        }

        if let apns = reader.object(root["apns"], "apns") {
            reader.checkKeys(
                apns, "apns",
                allowed: [
                    "connectionsPerPool", "streamsPerConnection",
                    "requestTimeoutSeconds", "maxAttempts",
                ])
            reader.int(apns, "connectionsPerPool", "apns", in: 1...64, into: &config.apns.connectionsPerPool)
            reader.int(apns, "streamsPerConnection", "apns", in: 1...2000, into: &config.apns.streamsPerConnection)
            reader.int(apns, "requestTimeoutSeconds", "apns", in: 1...600, into: &config.apns.requestTimeoutSeconds)
            reader.int(apns, "maxAttempts", "apns", in: 1...20, into: &config.apns.maxAttempts)
        }

        if let webPush = reader.object(root["webPush"], "webPush") {
            let p = "webPush"
            reader.checkKeys(
                webPush, p,
                allowed: [
                    "maxInFlight", "maxInFlightPerService", "connectTimeoutSeconds",
                    "unreachableAfterFailures", "unreachableAfterSeconds",
                ])
            reader.int(
                webPush, "unreachableAfterFailures", p, in: 1...1000, into: &config.webPush.unreachableAfterFailures)
            reader.int(
                webPush, "unreachableAfterSeconds", p, in: 0...(30 * 86_400),
                into: &config.webPush.unreachableAfterSeconds)
            reader.int(webPush, "maxInFlight", p, in: 1...100_000, into: &config.webPush.maxInFlight)
            reader.int(
                webPush, "maxInFlightPerService", p, in: 1...100_000, into: &config.webPush.maxInFlightPerService)
            reader.int(webPush, "connectTimeoutSeconds", p, in: 1...60, into: &config.webPush.connectTimeoutSeconds)
            if config.webPush.maxInFlightPerService > config.webPush.maxInFlight {
                reader.error(
                    "\(p).maxInFlightPerService", "must not exceed maxInFlight (\(config.webPush.maxInFlight))")
            }
        }

        if let engine = reader.object(root["engine"], "engine") {
            reader.checkKeys(
                engine, "engine",
                allowed: [
                    "concurrentPublishes", "pageSize", "leaseSeconds", "maxScheduleDays",
                    "nodeId", "expressPublishSlots", "maxParkedPublishes",
                ])
            reader.int(engine, "maxScheduleDays", "engine", in: 1...366, into: &config.engine.maxScheduleDays)
            reader.int(engine, "concurrentPublishes", "engine", in: 1...64, into: &config.engine.concurrentPublishes)
            reader.int(engine, "pageSize", "engine", in: 10...100_000, into: &config.engine.pageSize)
            reader.int(engine, "expressPublishSlots", "engine", in: 0...64, into: &config.engine.expressPublishSlots)
            reader.int(engine, "maxParkedPublishes", "engine", in: 0...10_000, into: &config.engine.maxParkedPublishes)
            reader.int(engine, "leaseSeconds", "engine", in: 5...3600, into: &config.engine.leaseSeconds)
            if let v = reader.string(engine, "nodeId", "engine") {
                let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
                if (1...64).contains(v.count) && v.allSatisfy(allowed.contains) {
                    config.engine.nodeID = v
                } else {
                    reader.error("engine.nodeId", "must be 1 to 64 letters, digits, '.', '_' or '-', got \"\(v)\"")
                }
            }
        }

        if let webhooks = reader.object(root["webhooks"], "webhooks") {
            readWebhooks(webhooks, into: &config.webhooks, &reader)
        }

        if let keys = reader.object(root["keys"], "keys") {
            reader.checkKeys(keys, "keys", allowed: ["encryptionKey", "encryptionKeyEnv", "encryptionKeyFile"])
            config.keys.encryptionKey = readSecret(keys, "keys", .keyEncryption, &reader, environment: environment)
        }
        if let tracing = reader.object(root["tracing"], "tracing") {
            readTracing(tracing, into: &config.tracing, &reader)
        }
        applyTracingEnvironment(environment, into: &config.tracing, &reader)

        if let console = reader.object(root["console"], "console") {
            reader.checkKeys(console, "console", allowed: ["enabled", "testPushesPerSecond"])
            reader.bool(console, "enabled", "console", into: &config.console.enabled)
            reader.int(
                console, "testPushesPerSecond", "console", in: 1...1000, into: &config.console.testPushesPerSecond)
        }

        if let log = reader.object(root["log"], "log") {
            reader.checkKeys(log, "log", allowed: ["level"])
            if let name = reader.string(log, "level", "log") {
                if let level = LogLevel(name: name) {
                    config.logLevel = level
                } else {
                    reader.error("log.level", "must be one of trace, debug, info, notice, warning, error, critical")
                }
            }
        }

        readAdmin(root, into: &config, &reader, environment: environment)
        readInstances(root["instances"], into: &config, &reader, environment: environment, validateKey: validateKey)

        let unset = explainUnsetVariables(in: document, environment, &reader)
        let errors = reader.issues.filter { $0.severity == .error }
        guard errors.isEmpty else { throw ConfigError(issues: reader.issues, unsetVariables: unset) }
        config.secretSources = reader.secretSources
        return (config, reader.issues)
    }

    /// `IPv4:port` or `[IPv6]:port`, numeric only (the listener binds addresses, it does not resolve names).
    static func parseEndpoint(_ text: String) -> Endpoint? {
        guard let (host, portText, bracketed) = IPAddress.splitHostPort(text),
            let port = Int(portText), (0...65535).contains(port), !portText.hasPrefix("+"),
            let address = IPAddress(host), (address.family == .v6) == bracketed
        else { return nil }
        return Endpoint(host: host, port: port)
    }
}
