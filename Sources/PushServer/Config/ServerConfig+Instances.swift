import BeamsModel
import ConfigModel
import Foundation
import HTTPClient
import JSON
import Logging
import PushStore

// The `instances` section: ids, secrets, APNs credentials and instance webhooks.
extension ServerConfig {
    static func readInstances(
        _ value: JSONValue?, into config: inout ServerConfig, _ reader: inout ConfigReader,
        environment: [String: String], validateKey: (String) -> String?
    ) {
        // With server-admin keys, every instance may be created at run time: the file may name none.
        let required = config.admin.keys.isEmpty
        guard let value, !(value.isNull) else {
            if required {
                reader.error("instances", "at least one instance is required (or server-admin keys, admin.keys)")
            }
            return
        }
        guard let list = value.arrayValue else {
            reader.error("instances", "must be an array")
            return
        }
        if list.isEmpty && required {
            reader.error("instances", "at least one instance is required (or server-admin keys, admin.keys)")
        }
        var seen: Set<String> = []
        for (index, element) in list.enumerated() {
            let p = "instances[\(index)]"
            guard let object = reader.object(element, p) else {
                if element.isNull { reader.error(p, "must be an object") }
                continue
            }
            if let id = object["id"]?.stringValue, UUID(uuidString: id) != nil, !seen.insert(id.lowercased()).inserted {
                reader.error("\(p).id", "duplicate instance id \(id)")
            }
            if let instance = readInstance(
                object, p, policy: config.webhooks.policy, &reader, environment: environment,
                validateKey: validateKey)
            {
                config.instances.append(instance)
                config.instanceFingerprints[instance.id.lowercased()] = "config:" + JSONValue.object(object).jsonText
            }
        }
    }

    /// Reads and validates one instance object: an entry of the config file's `instances`, or an instance created
    /// or changed at run time (`InstanceDefinition`), so both are held to exactly the same rules. Every problem is
    /// recorded in `reader` under `p`. - Returns: the instance, or nil when it has an error.
    static func readInstance(
        _ object: [String: JSONValue], _ p: String, policy: DestinationPolicy, _ reader: inout ConfigReader,
        environment: [String: String], validateKey: (String) -> String?
    ) -> InstanceConfig? {
        let errorsBefore = reader.issues.count { $0.severity == .error }
        reader.checkKeys(
            object, p,
            allowed: [
                "id", "secretKey", "secretKeyEnv", "secretKeyFile", "apns", "fcm", "web",
                "unifiedpush", "hms", "webhook", "delivery", "publishWeight",
                "beamsBridge", "quotas",
                "beamsSecretScopes",
            ])
        let id = reader.string(object, "id", p)
        if let id {
            if UUID(uuidString: id) == nil {
                reader.error("\(p).id", "must be a UUID (Beams instance ids are UUIDs; the iOS SDK rejects others)")
            }
        } else {
            reader.error("\(p).id", "is required")
        }
        let secret = readSecret(object, p, .instance, &reader, environment: environment)
        let apns = reader.object(object["apns"], "\(p).apns").flatMap {
            readAPNs($0, "\(p).apns", &reader, environment: environment, validateKey: validateKey)
        }
        if object["apns"] == nil || object["apns"]!.isNull {
            reader.warning(
                "\(p).apns",
                "no APNs credentials: devices and publishes are accepted, deliveries are reported as not sent")
        }
        let fcm = reader.object(object["fcm"], "\(p).fcm").flatMap {
            readFCM($0, "\(p).fcm", &reader, environment: environment)
        }
        let web = reader.object(object["web"], "\(p).web").flatMap {
            readWeb($0, "\(p).web", &reader, environment: environment)
        }
        let unifiedpush = reader.object(object["unifiedpush"], "\(p).unifiedpush").flatMap {
            readUnifiedPush(
                $0, "\(p).unifiedpush", hasWeb: object["web"].map { !$0.isNull } ?? false, &reader,
                environment: environment)
        }
        let hms = reader.object(object["hms"], "\(p).hms").flatMap {
            readHMS($0, "\(p).hms", &reader, environment: environment)
        }
        var webhook: WebhookConfig?
        if let hook = reader.object(object["webhook"], "\(p).webhook") {
            webhook = readWebhook(hook, "\(p).webhook", policy: policy, &reader, environment: environment)
        }
        let delivery = reader.object(object["delivery"], "\(p).delivery").map {
            readDelivery($0, "\(p).delivery", &reader)
        }
        let bridge = reader.object(object["beamsBridge"], "\(p).beamsBridge").flatMap {
            readBeamsBridge($0, "\(p).beamsBridge", localID: id, &reader, environment: environment)
        }
        // Read even when the id or secret is wrong, so every problem of the object is reported at once.
        let weight = reader.int(object, "publishWeight", p, in: 1...100)
        let quotas = reader.object(object["quotas"], "\(p).quotas").map { readQuotas($0, "\(p).quotas", &reader) }
        let scopes = readScopes(object["beamsSecretScopes"], "\(p).beamsSecretScopes", &reader)
        guard let id, let secret else { return nil }
        var instance = InstanceConfig(id: id, secretKey: secret, apns: apns, webhook: webhook, fcm: fcm, web: web)
        instance.delivery = delivery ?? InstanceDeliveryConfig()
        instance.unifiedpush = unifiedpush
        instance.hms = hms
        instance.beamsBridge = bridge
        if let weight { instance.publishWeight = weight }
        if let quotas { instance.quotas = quotas }
        if let scopes { instance.beamsSecretScopes = scopes }
        return reader.issues.count(where: { $0.severity == .error }) == errorsBefore ? instance : nil
    }

    /// `instances[].beamsSecretScopes`: a list of scope names (`["publish", "publish:read"]`) or `"full"`.
    static func readScopes(_ value: JSONValue?, _ p: String, _ reader: inout ConfigReader) -> Set<APIKeyScope>? {
        guard let value, !value.isNull else { return nil }
        if value.stringValue == "full" { return APIKeyScope.all }
        guard let list = value.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
            reader.error(p, "must be \"full\" or a list of scope names")
            return nil
        }
        switch APIKeyScope.parse(list.compactMap(\.stringValue)) {
        case .success(let scopes): return scopes
        case .failure(let unknown):
            reader.error(p, unknown.description)
            return nil
        }
    }

    /// `instances[].delivery`: the default time zone and the throttle default and maximum.
    static func readDelivery(_ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader)
        -> InstanceDeliveryConfig
    {
        reader.checkKeys(object, p, allowed: ["defaultTimeZone", "defaultThrottlePerMinute", "maxThrottlePerMinute"])
        var delivery = InstanceDeliveryConfig()
        if let zone = reader.string(object, "defaultTimeZone", p) {
            if let problem = TimeZoneName.problem(zone) {
                reader.error("\(p).defaultTimeZone", problem)
            } else {
                delivery.defaultTimeZone = zone
            }
        }
        let range = 1...DeliveryOptions.maxThrottlePerMinute
        delivery.maxThrottlePerMinute = reader.int(object, "maxThrottlePerMinute", p, in: range)
        delivery.defaultThrottlePerMinute = reader.int(object, "defaultThrottlePerMinute", p, in: range)
        if let rate = delivery.defaultThrottlePerMinute, let maximum = delivery.maxThrottlePerMinute, rate > maximum {
            reader.error(
                "\(p).defaultThrottlePerMinute", "must not exceed maxThrottlePerMinute (\(maximum)), got \(rate)")
        }
        return delivery
    }

    /// An instance's webhook receiver: an http(s) URL and its signing secret, which is required (an unsigned
    /// instance webhook could be forged by anyone who can reach the receiver). A literal address the destination
    /// policy refuses is an error here, since every attempt would fail; host names are judged at send time (DNS).
    static func readWebhook(
        _ hook: [String: JSONValue], _ p: String, policy: DestinationPolicy, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> WebhookConfig? {
        reader.checkKeys(hook, p, allowed: ["url", "secret", "secretEnv", "secretFile", "invalidationsUrl"])
        let url = readWebhookURL(hook, "url", p, policy: policy, &reader)
        if url == nil && (hook["url"]?.isNull ?? true) {
            reader.error("\(p).url", "is required")
        }
        // Off unless set: `device.invalidated` events go only to a receiver that asked for them.
        let invalidationsURL = readWebhookURL(hook, "invalidationsUrl", p, policy: policy, &reader)
        let secret = readSecret(hook, p, .webhook, &reader, environment: environment)
        guard let url, let secret else { return nil }
        return WebhookConfig(url: url, secret: secret, invalidationsURL: invalidationsURL)
    }

    /// An http(s) URL of a webhook receiver; a literal address the destination policy refuses is an error.
    static func readWebhookURL(
        _ hook: [String: JSONValue], _ key: String, _ p: String, policy: DestinationPolicy, _ reader: inout ConfigReader
    ) -> String? {
        guard let text = reader.string(hook, key, p) else { return nil }
        do {
            let parsed = try HTTPURL(text)
            if let address = parsed.literalAddress,
                case .refused(let range) = policy.verdict(for: address, host: parsed.host)
            {
                reader.error(
                    "\(p).\(key)",
                    "\(address) is \(range): list it in webhooks.allowedDestinations to send webhooks there")
                return nil
            }
        } catch {
            reader.error("\(p).\(key)", "\(error)")
            return nil
        }
        return text
    }

    static func readAPNs(
        _ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader,
        environment: [String: String], validateKey: (String) -> String?
    ) -> APNsInstanceConfig? {
        reader.checkKeys(
            object, p,
            allowed: [
                "teamId", "keyId", "keyPath", "topic", "defaultEnvironment",
                "endpointOverride", "caFile", "certificate", "broadcast",
            ])
        let team = reader.string(object, "teamId", p) ?? ""
        let keyID = reader.string(object, "keyId", p) ?? ""
        let keyPath = expandVariables(reader.string(object, "keyPath", p) ?? "", environment)
        var topic = reader.string(object, "topic", p) ?? ""
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
        // Certificate authentication instead of the .p8 key: exactly one of them (see ServerConfig+Certificate).
        var certificate: APNsCertificateConfig?
        let certificateGiven = !(object["certificate"]?.isNull ?? true)
        if certificateGiven && !credentials.allSatisfy(\.isEmpty) {
            reader.error(
                "\(p).certificate", "give either the .p8 key (teamId, keyId, keyPath) or certificate, not both")
        } else if let certificateObject = reader.object(object["certificate"], "\(p).certificate") {
            certificate = readAPNsCertificate(
                certificateObject, "\(p).certificate", &reader, environment: environment,
                now: Date())
            if let certificate {
                topic = certificateTopic(topic, certificate, p, &reader)
                checkCertificateEnvironments(
                    certificate, env, endpointOverride: endpoint != nil, "\(p).certificate",
                    &reader)
            }
        }
        if certificateGiven {
            // Checked above (the certificate's topics decide, and its UID is the default).
        } else if credentials.allSatisfy(\.isEmpty) {
            reader.warning(
                p, "teamId, keyId and keyPath are empty: deliveries are reported as not sent (no APNs credentials)")
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
            if !keyPath.isEmpty { reader.secret("\(p).keyPath", file: keyPath) }
            if !keyPath.isEmpty, checkReadable(keyPath, "\(p).keyPath", &reader), let problem = validateKey(keyPath) {
                reader.error("\(p).keyPath", problem)
            }
        }
        if topic.isEmpty && !certificateGiven {
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
        var apns = APNsInstanceConfig(
            teamID: team, keyID: keyID, keyPath: keyPath, topic: topic, defaultEnvironment: env,
            endpointOverride: endpoint, caFile: caFile, certificate: certificate)
        apns.broadcast = reader.object(object["broadcast"], "\(p).broadcast").map {
            readBroadcast($0, "\(p).broadcast", &reader)
        }
        return apns
    }

    /// Apple Team IDs and Key IDs are 10 upper-case alphanumerics.
    static func isAppleIdentifier(_ value: String) -> Bool {
        value.utf8.count == 10 && value.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
    }
}
