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
    public static func load(
        path: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        validateKey: (String) -> String? = { _ in nil }
    ) throws(ConfigError) -> (ServerConfig, warnings: [ConfigIssue]) {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "file not found"
            throw ConfigError(issues: [ConfigIssue(path, reason)])
        }
        return try parse(data, baseDirectory: URL(fileURLWithPath: path).deletingLastPathComponent().path,
                         environment: environment, validateKey: validateKey)
    }

    /// Parses config JSON; relative file paths inside it are resolved against `baseDirectory`'s caller cwd
    /// semantics (left relative: the process's working directory, as documented).
    public static func parse(
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
        reader.checkKeys(root, "", allowed: ["listen", "ops", "storage", "limits", "apns", "engine", "webhooks", "log",
                                             "console", "instances"])
        let expand = { (value: String) in expandVariables(value, environment) }

        if let listen = reader.object(root["listen"], "listen") {
            reader.checkKeys(listen, "listen", allowed: ["host", "port", "tls", "eventLoops"])
            if let host = reader.string(listen, "host", "listen") {
                if host.isEmpty { reader.error("listen.host", "must not be empty") } else { config.listen.host = host }
            }
            if let port = reader.int(listen, "port", "listen", in: 0...65535) { config.listen.port = port }
            if let loops = reader.int(listen, "eventLoops", "listen", in: 0...256) { config.listen.eventLoops = loops }
            if let tls = reader.object(listen["tls"], "listen.tls") {
                reader.checkKeys(tls, "listen.tls", allowed: ["certificatePath", "privateKeyPath"])
                let cert = reader.string(tls, "certificatePath", "listen.tls").map(expand)
                let key = reader.string(tls, "privateKeyPath", "listen.tls").map(expand)
                if cert == nil { reader.error("listen.tls.certificatePath", "is required when tls is set") }
                if key == nil { reader.error("listen.tls.privateKeyPath", "is required when tls is set") }
                if let cert { checkReadable(cert, "listen.tls.certificatePath", &reader) }
                if let key { checkReadable(key, "listen.tls.privateKeyPath", &reader) }
                if let cert, let key { config.listen.tls = TLSFiles(certificatePath: cert, privateKeyPath: key) }
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
                    reader.error("ops.listen", "must be an IP address and port such as 127.0.0.1:9090 or [::1]:9090, got \"\(text)\"")
                }
            }
            config.ops.token = readSecret(ops, "ops", .opsToken, &reader, environment: environment)
        }

        if let storage = reader.object(root["storage"], "storage") {
            reader.checkKeys(storage, "storage", allowed: [
                "path", "synchronous", "retentionDays", "outageLogIntervalSeconds", "outageRetryAfterSeconds",
            ])
            if let days = reader.int(storage, "retentionDays", "storage", in: 0...36500) { config.storage.retentionDays = days }
            if let v = reader.int(storage, "outageLogIntervalSeconds", "storage", in: 1...86400) {
                config.storage.outageLogIntervalSeconds = v
            }
            if let v = reader.int(storage, "outageRetryAfterSeconds", "storage", in: 1...3600) {
                config.storage.outageRetryAfterSeconds = v
            }
            if let path = reader.string(storage, "path", "storage").map(expand) {
                if path.isEmpty { reader.error("storage.path", "must not be empty") } else { config.storage.path = path }
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
            reader.checkKeys(apns, "apns", allowed: ["connectionsPerPool", "streamsPerConnection",
                                                     "requestTimeoutSeconds", "maxAttempts"])
            if let v = reader.int(apns, "connectionsPerPool", "apns", in: 1...64) { config.apns.connectionsPerPool = v }
            if let v = reader.int(apns, "streamsPerConnection", "apns", in: 1...2000) { config.apns.streamsPerConnection = v }
            if let v = reader.int(apns, "requestTimeoutSeconds", "apns", in: 1...600) { config.apns.requestTimeoutSeconds = v }
            if let v = reader.int(apns, "maxAttempts", "apns", in: 1...20) { config.apns.maxAttempts = v }
        }

        if let engine = reader.object(root["engine"], "engine") {
            reader.checkKeys(engine, "engine", allowed: ["concurrentPublishes", "pageSize", "leaseSeconds"])
            if let v = reader.int(engine, "concurrentPublishes", "engine", in: 1...64) { config.engine.concurrentPublishes = v }
            if let v = reader.int(engine, "pageSize", "engine", in: 10...100_000) { config.engine.pageSize = v }
            if let v = reader.int(engine, "leaseSeconds", "engine", in: 5...3600) { config.engine.leaseSeconds = v }
        }

        if let webhooks = reader.object(root["webhooks"], "webhooks") {
            readWebhooks(webhooks, into: &config.webhooks, &reader)
        }

        if let console = reader.object(root["console"], "console") {
            reader.checkKeys(console, "console", allowed: ["enabled", "testPushesPerSecond"])
            if let v = reader.bool(console, "enabled", "console") { config.console.enabled = v }
            if let v = reader.int(console, "testPushesPerSecond", "console", in: 1...1000) { config.console.testPushesPerSecond = v }
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

        readInstances(root["instances"], into: &config, &reader, environment: environment, validateKey: validateKey)

        let errors = reader.issues.filter { $0.severity == .error }
        guard errors.isEmpty else { throw ConfigError(issues: reader.issues) }
        return (config, reader.issues)
    }

    private static func readLimits(_ limits: [String: JSONValue], into out: inout Limits, _ reader: inout ConfigReader) {
        let p = "limits"
        reader.checkKeys(limits, p, allowed: [
            "maxRequestLineBytes", "maxHeaderBytes", "maxBodyBytes", "maxConnections", "headerTimeoutSeconds",
            "bodyTimeoutSeconds", "idleTimeoutSeconds", "writeTimeoutSeconds", "requestsPerSecondPerInstance",
            "maxDevicesPerUser", "ipRequestsPerSecond", "ipBurst", "deviceRequestsPerSecondPerInstance",
            "reportsPerSecondPerInstance", "maxDevicesPerInstance", "maxTrackedClients", "authFailuresPerIP",
            "authFailureWindowSeconds", "authLockoutSeconds", "trustedProxies",
        ])
        if let v = reader.int(limits, "maxRequestLineBytes", p, in: 256...1_048_576) { out.maxRequestLineBytes = v }
        if let v = reader.int(limits, "maxHeaderBytes", p, in: 1024...1_048_576) { out.maxHeaderBytes = v }
        if let v = reader.int(limits, "maxBodyBytes", p, in: 1024...(64 << 20)) { out.maxBodyBytes = v }
        if let v = reader.int(limits, "maxConnections", p, in: 1...1_000_000) { out.maxConnections = v }
        if let v = reader.int(limits, "headerTimeoutSeconds", p, in: 1...3600) { out.headerTimeoutSeconds = v }
        if let v = reader.int(limits, "bodyTimeoutSeconds", p, in: 1...3600) { out.bodyTimeoutSeconds = v }
        if let v = reader.int(limits, "idleTimeoutSeconds", p, in: 1...86400) { out.idleTimeoutSeconds = v }
        if let v = reader.int(limits, "writeTimeoutSeconds", p, in: 1...3600) { out.writeTimeoutSeconds = v }
        if let v = reader.int(limits, "requestsPerSecondPerInstance", p, in: 1...1_000_000) {
            out.requestsPerSecondPerInstance = v
        }
        if let v = reader.int(limits, "maxDevicesPerUser", p, in: 1...100_000) { out.maxDevicesPerUser = v }
        if let v = reader.int(limits, "ipRequestsPerSecond", p, in: 0...1_000_000) { out.ipRequestsPerSecond = v }
        if let v = reader.int(limits, "ipBurst", p, in: 1...10_000_000) { out.ipBurst = v }
        if let v = reader.int(limits, "deviceRequestsPerSecondPerInstance", p, in: 0...1_000_000) {
            out.deviceRequestsPerSecondPerInstance = v
        }
        if let v = reader.int(limits, "reportsPerSecondPerInstance", p, in: 0...1_000_000) {
            out.reportsPerSecondPerInstance = v
        }
        if let v = reader.int(limits, "maxDevicesPerInstance", p, in: 1...1_000_000_000) { out.maxDevicesPerInstance = v }
        if let v = reader.int(limits, "maxTrackedClients", p, in: 1000...10_000_000) { out.maxTrackedClients = v }
        if let v = reader.int(limits, "authFailuresPerIP", p, in: 0...1_000_000) { out.authFailuresPerIP = v }
        if let v = reader.int(limits, "authFailureWindowSeconds", p, in: 1...86_400) { out.authFailureWindowSeconds = v }
        if let v = reader.int(limits, "authLockoutSeconds", p, in: 1...86_400) { out.authLockoutSeconds = v }
        if let value = limits["trustedProxies"], !value.isNull {
            if let list = value.arrayValue {
                var proxies: [String] = []
                for (index, element) in list.enumerated() {
                    if let text = element.stringValue, let address = ClientAddress.canonical(text) {
                        proxies.append(address)
                    } else {
                        reader.error("\(p).trustedProxies[\(index)]", "must be an IPv4 or IPv6 address, got \(element.jsonText)")
                    }
                }
                out.trustedProxies = proxies
            } else {
                reader.error("\(p).trustedProxies", "must be an array of IP addresses, got \(value.typeName)")
            }
        }
    }

    private static func readWebhooks(_ object: [String: JSONValue], into out: inout Webhooks, _ reader: inout ConfigReader) {
        let p = "webhooks"
        reader.checkKeys(object, p, allowed: ["allowedDestinations", "timeoutSeconds", "connectTimeoutSeconds",
                                              "maxResponseBytes"])
        if let v = reader.int(object, "timeoutSeconds", p, in: 1...60) { out.timeoutSeconds = v }
        if let v = reader.int(object, "connectTimeoutSeconds", p, in: 1...60) { out.connectTimeoutSeconds = v }
        if let v = reader.int(object, "maxResponseBytes", p, in: 1024...(16 << 20)) { out.maxResponseBytes = v }
        if out.connectTimeoutSeconds > out.timeoutSeconds {
            reader.error("\(p).connectTimeoutSeconds", "must not exceed timeoutSeconds (\(out.timeoutSeconds))")
        }
        guard let value = object["allowedDestinations"], !value.isNull else { return }
        guard let list = value.arrayValue else {
            reader.error("\(p).allowedDestinations", "must be an array of strings, got \(value.typeName)")
            return
        }
        for (index, element) in list.enumerated() {
            let field = "\(p).allowedDestinations[\(index)]"
            guard let text = element.stringValue else {
                reader.error(field, "must be a string, got \(element.typeName)")
                continue
            }
            do {
                out.allowedDestinations.append(try DestinationPolicy.Allowance(parsing: text))
            } catch {
                reader.error(field, "\"\(text)\" \(error)")
            }
        }
    }

    private static func readInstances(
        _ value: JSONValue?, into config: inout ServerConfig, _ reader: inout ConfigReader,
        environment: [String: String], validateKey: (String) -> String?
    ) {
        guard let value, !(value.isNull) else {
            reader.error("instances", "at least one instance is required")
            return
        }
        guard let list = value.arrayValue else {
            reader.error("instances", "must be an array")
            return
        }
        if list.isEmpty { reader.error("instances", "at least one instance is required") }
        var seen: Set<String> = []
        for (index, element) in list.enumerated() {
            let p = "instances[\(index)]"
            guard let object = reader.object(element, p) else {
                if element.isNull { reader.error(p, "must be an object") }
                continue
            }
            reader.checkKeys(object, p, allowed: ["id", "secretKey", "secretKeyEnv", "secretKeyFile", "apns", "webhook"])
            let id = reader.string(object, "id", p)
            if let id {
                if UUID(uuidString: id) == nil {
                    reader.error("\(p).id", "must be a UUID (Beams instance ids are UUIDs; the iOS SDK rejects others)")
                } else if !seen.insert(id.lowercased()).inserted {
                    reader.error("\(p).id", "duplicate instance id \(id)")
                }
            } else {
                reader.error("\(p).id", "is required")
            }
            let secret = readSecret(object, p, .instance, &reader, environment: environment)
            let apns = reader.object(object["apns"], "\(p).apns").flatMap {
                readAPNs($0, "\(p).apns", &reader, environment: environment, validateKey: validateKey)
            }
            if object["apns"] == nil || object["apns"]!.isNull {
                reader.warning("\(p).apns", "no APNs credentials: devices and publishes are accepted, deliveries are reported as not sent")
            }
            var webhook: WebhookConfig?
            if let hook = reader.object(object["webhook"], "\(p).webhook") {
                webhook = readWebhook(hook, "\(p).webhook", policy: config.webhooks.client.policy, &reader,
                                      environment: environment)
            }
            if let id, let secret {
                config.instances.append(InstanceConfig(id: id, secretKey: secret, apns: apns, webhook: webhook))
            }
        }
    }

    /// An instance's webhook receiver: an http(s) URL and its signing secret, which is required (an unsigned
    /// instance webhook could be forged by anyone who can reach the receiver). A literal address the destination
    /// policy refuses is an error here, since every attempt would fail; host names are judged at send time (DNS).
    private static func readWebhook(
        _ hook: [String: JSONValue], _ p: String, policy: DestinationPolicy, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> WebhookConfig? {
        reader.checkKeys(hook, p, allowed: ["url", "secret", "secretEnv", "secretFile"])
        var url = reader.string(hook, "url", p)
        if let text = url {
            do {
                let parsed = try HTTPURL(text)
                if let address = parsed.literalAddress,
                   case .refused(let range) = policy.verdict(for: address, host: parsed.host) {
                    reader.error("\(p).url", "\(address) is \(range): list it in webhooks.allowedDestinations to send webhooks there")
                    url = nil
                }
            } catch {
                reader.error("\(p).url", "\(error)")
                url = nil
            }
        } else if hook["url"]?.isNull ?? true {
            reader.error("\(p).url", "is required")
        }
        let secret = readSecret(hook, p, .webhook, &reader, environment: environment)
        guard let url, let secret else { return nil }
        return WebhookConfig(url: url, secret: secret)
    }

    /// The field names of the three ways to give a secret (inline, an environment variable's name, a file path),
    /// whether one is required, and the shortest value accepted.
    struct SecretKeys {
        var inline: String
        var env: String
        var file: String
        var required = true
        /// Instance secrets and the ops token guard the server against guessing: shorter ones are refused. A
        /// webhook secret is the receiver's choice (Beams sets no minimum).
        var minimumBytes = minimumSecretBytes

        static let instance = SecretKeys(inline: "secretKey", env: "secretKeyEnv", file: "secretKeyFile")
        static let webhook = SecretKeys(inline: "secret", env: "secretEnv", file: "secretFile", minimumBytes: 1)
        static let opsToken = SecretKeys(inline: "token", env: "tokenEnv", file: "tokenFile", required: false)
    }

    /// Secrets shorter than this are refused: they would be guessable.
    static let minimumSecretBytes = 32

    private static func readSecret(
        _ object: [String: JSONValue], _ p: String, _ fields: SecretKeys, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> String? {
        let inline = reader.string(object, fields.inline, p)
        let env = reader.string(object, fields.env, p)
        let file = reader.string(object, fields.file, p).map { expandVariables($0, environment) }
        let given = [inline, env, file].compactMap { $0 }.count
        if given == 0 && !fields.required { return nil }
        guard given == 1 else {
            reader.error("\(p).\(fields.inline)", given == 0
                ? "one of \(fields.inline), \(fields.env) or \(fields.file) is required"
                : "give only one of \(fields.inline), \(fields.env) or \(fields.file)")
            return nil
        }
        var secret: String
        var field = "\(p).\(fields.inline)"
        if let inline {
            secret = inline
        } else if let env {
            field = "\(p).\(fields.env)"
            guard let value = environment[env] else {
                reader.error(field, "environment variable \(env) is not set")
                return nil
            }
            secret = value
        } else if let file {
            field = "\(p).\(fields.file)"
            guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
                reader.error(field, FileManager.default.fileExists(atPath: file) ? "cannot be read (\(file))" : "file not found (\(file))")
                return nil
            }
            secret = text
        } else {
            return nil
        }
        // Files and env vars often end with a newline that is not part of the secret.
        secret = secret.trimmingCharacters(in: .whitespacesAndNewlines)
        if secret.isEmpty {
            reader.error(field, "the secret is empty")
            return nil
        }
        if secret.utf8.count < fields.minimumBytes {
            reader.error(field, "the secret must be at least \(fields.minimumBytes) bytes; generate one with "
                + "`head -c 32 /dev/urandom | base64`")
            return nil
        }
        return secret
    }

    /// `IPv4:port` or `[IPv6]:port`, numeric only (the listener binds addresses, it does not resolve names).
    static func parseEndpoint(_ text: String) -> Endpoint? {
        guard let (host, portText, bracketed) = IPAddress.splitHostPort(text),
              let port = Int(portText), (0...65535).contains(port), !portText.hasPrefix("+"),
              let address = IPAddress(host), (address.family == .v6) == bracketed
        else { return nil }
        return Endpoint(host: host, port: port)
    }

    private static func readAPNs(
        _ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader,
        environment: [String: String], validateKey: (String) -> String?
    ) -> APNsInstanceConfig? {
        reader.checkKeys(object, p, allowed: ["teamId", "keyId", "keyPath", "topic", "defaultEnvironment",
                                              "endpointOverride", "caFile"])
        let team = reader.string(object, "teamId", p) ?? ""
        let keyID = reader.string(object, "keyId", p) ?? ""
        let keyPath = expandVariables(reader.string(object, "keyPath", p) ?? "", environment)
        let topic = reader.string(object, "topic", p) ?? ""
        var env = PushEnvironment.production
        if let name = reader.string(object, "defaultEnvironment", p) {
            if let value = PushEnvironment(rawValue: name.lowercased()) {
                env = value
            } else {
                reader.error("\(p).defaultEnvironment", "must be \"sandbox\" or \"production\", got \"\(name)\"")
            }
        }
        let endpoint = reader.string(object, "endpointOverride", p)
        let caFile = reader.string(object, "caFile", p).map { expandVariables($0, environment) }

        let credentials = [team, keyID, keyPath]
        if credentials.allSatisfy(\.isEmpty) {
            reader.warning(p, "teamId, keyId and keyPath are empty: deliveries are reported as not sent (no APNs credentials)")
        } else {
            if team.isEmpty { reader.error("\(p).teamId", "is required when keyId or keyPath is set") }
            if keyID.isEmpty { reader.error("\(p).keyId", "is required when teamId or keyPath is set") }
            if keyPath.isEmpty { reader.error("\(p).keyPath", "is required when teamId or keyId is set") }
            if !team.isEmpty && !isAppleIdentifier(team) {
                reader.error("\(p).teamId", "must be the 10-character Team ID from the Apple developer account")
            }
            if !keyID.isEmpty && !isAppleIdentifier(keyID) {
                reader.error("\(p).keyId", "must be the 10-character Key ID of the .p8 key")
            }
            if !keyPath.isEmpty, checkReadable(keyPath, "\(p).keyPath", &reader), let problem = validateKey(keyPath) {
                reader.error("\(p).keyPath", problem)
            }
        }
        if topic.isEmpty {
            reader.error("\(p).topic", "is required: the app's bundle id, e.g. com.example.app")
        } else if topic.contains(where: { $0.isWhitespace || $0 == "/" }) {
            reader.error("\(p).topic", "must be a bundle id such as com.example.app")
        }
        if let endpoint {
            if URL(string: endpoint)?.scheme != "https" {
                reader.error("\(p).endpointOverride", "must be an https URL")
            }
        }
        if let caFile { checkReadable(caFile, "\(p).caFile", &reader) }
        return APNsInstanceConfig(teamID: team, keyID: keyID, keyPath: keyPath, topic: topic, defaultEnvironment: env,
                                  endpointOverride: endpoint, caFile: caFile)
    }

    /// Apple Team IDs and Key IDs are 10 upper-case alphanumerics.
    static func isAppleIdentifier(_ value: String) -> Bool {
        value.utf8.count == 10 && value.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
    }

    @discardableResult
    private static func checkReadable(_ path: String, _ field: String, _ reader: inout ConfigReader) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            reader.error(field, "file not found (\(path))")
            return false
        }
        if isDirectory.boolValue {
            reader.error(field, "is a directory, not a file (\(path))")
            return false
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            reader.error(field, "file is not readable (\(path))")
            return false
        }
        return true
    }

    /// Expands `${NAME}` from the environment (unknown names expand to nothing, and the path check then names
    /// the resulting path).
    static func expandVariables(_ value: String, _ environment: [String: String]) -> String {
        guard value.contains("${") else { return value }
        var result = ""
        var rest = Substring(value)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                result += rest[start.lowerBound...]
                return result
            }
            result += environment[String(rest[start.upperBound..<end])] ?? ""
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }
}
