import ConfigModel
import FCMClient
import Foundation
import HTTPClient
import JSON
import WebPush

// The `instances[].fcm` and `instances[].web` sections. Both load their key files here, so a bad file fails at
// start-up and in `check-config` rather than at the first delivery. Key material never reaches an error message.
extension ServerConfig {
    static func readFCM(
        _ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> FCMInstanceConfig? {
        reader.checkKeys(object, p, allowed: ["serviceAccountFile", "projectId", "endpointOverride", "caFile"])
        guard let path = reader.string(object, "serviceAccountFile", p).map({ expandVariables($0, environment) }),
            !path.isEmpty
        else {
            reader.error(
                "\(p).serviceAccountFile", "is required: the service-account JSON key file from the Firebase console")
            return nil
        }
        var projectOverride: String?
        if let project = reader.string(object, "projectId", p) {
            // Goes into the request path `projects/{id}/messages:send`: Google's id alphabet only (the rule the
            // sender applies to it and to the file's `project_id`).
            if project.utf8.count > 128 || !ServiceAccount.isValidProjectID(project) {
                reader.error(
                    "\(p).projectId", "must be a Firebase project id (lower-case letters, digits, '-', '.', ':')")
            } else {
                projectOverride = project
            }
        }
        guard checkReadable(path, "\(p).serviceAccountFile", &reader) else { return nil }
        reader.secret("\(p).serviceAccountFile", file: path)
        let account: ServiceAccount
        do {
            account = try ServiceAccount(contentsOfFile: path)
        } catch {
            reader.error("\(p).serviceAccountFile", error.description)
            return nil
        }
        var config = FCMInstanceConfig(
            serviceAccountFile: path, serviceAccount: account,
            projectID: projectOverride ?? account.projectID)
        if let endpoint = reader.string(object, "endpointOverride", p) {
            if (try? HTTPURL(endpoint))?.scheme == "https" {
                config.endpointOverride = endpoint
            } else {
                reader.error("\(p).endpointOverride", "must be an https URL")
            }
        }
        if let caFile = readCAFile(object, p, &reader, environment: environment) { config.caFile = caFile }
        return config
    }

    static func readWeb(
        _ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> WebInstanceConfig? {
        reader.checkKeys(
            object, p,
            allowed: [
                "vapidKeyFile", "subject", "allowedOrigins", "pushServiceHosts",
                "allowedDestinations", "caFile",
            ])
        var keyPair: VAPIDKeyPair?
        let path = reader.string(object, "vapidKeyFile", p).map { expandVariables($0, environment) } ?? ""
        if path.isEmpty {
            reader.error(
                "\(p).vapidKeyFile",
                "is required: a P-256 private key PEM (create one with `push-server vapid-keygen FILE`)")
        } else if checkReadable(path, "\(p).vapidKeyFile", &reader) {
            reader.secret("\(p).vapidKeyFile", file: path)
            do {
                keyPair = try VAPIDKeyPair(contentsOfFile: path)
            } catch {
                reader.error("\(p).vapidKeyFile", error.description)
            }
        }
        var subject: VAPIDSubject?
        if let text = reader.string(object, "subject", p) {
            do {
                subject = try VAPIDSubject(text)
            } catch {
                reader.error("\(p).subject", error.description)
            }
        } else {
            reader.error("\(p).subject", "is required: a mailto: or https: contact for the push services (RFC 8292)")
        }
        let origins = readAllowedOrigins(object["allowedOrigins"], "\(p).allowedOrigins", &reader)
        guard let keyPair, let subject, let origins else { return nil }
        var config = WebInstanceConfig(vapidKeyFile: path, keyPair: keyPair, subject: subject, allowedOrigins: origins)
        for (index, text) in strings(object["pushServiceHosts"], "\(p).pushServiceHosts", max: 100, &reader) {
            do {
                config.pushServiceHosts += try WebPushHostAllowlist(parsing: [text]).patterns
            } catch {
                reader.error(
                    "\(p).pushServiceHosts[\(index)]", "\"\(text.prefix(100))\" is not a host name or *.domain")
            }
        }
        for (index, text) in strings(object["allowedDestinations"], "\(p).allowedDestinations", max: 100, &reader) {
            do {
                config.allowedDestinations.append(try DestinationPolicy.Allowance(parsing: text))
            } catch {
                reader.error("\(p).allowedDestinations[\(index)]", "\"\(text.prefix(100))\" \(error)")
            }
        }
        if let caFile = readCAFile(object, p, &reader, environment: environment) { config.caFile = caFile }
        return config
    }

    /// `instances[].unifiedpush`: ports, the distinct-host cap, the per-host share and the address allowances. An
    /// allowance is a hole in the SSRF rules for endpoints any app user can register, so each one is a warning.
    static func readUnifiedPush(
        _ object: [String: JSONValue], _ p: String, hasWeb: Bool, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> UnifiedPushInstanceConfig? {
        reader.checkKeys(
            object, p, allowed: ["ports", "maxHosts", "maxInFlightPerHost", "allowedDestinations", "caFile"])
        if !hasWeb {
            reader.error(p, "needs the instance's web section: UnifiedPush messages are signed with its VAPID key")
        }
        var config = UnifiedPushInstanceConfig()
        if let value = object["ports"], !value.isNull {
            guard let list = value.arrayValue, !list.isEmpty, list.count <= 16 else {
                reader.error("\(p).ports", "must be an array of 1 to 16 port numbers")
                return nil
            }
            var ports: Set<Int> = []
            for (index, element) in list.enumerated() {
                guard let port = element.intValue, (1...65535).contains(port) else {
                    reader.error("\(p).ports[\(index)]", "must be a port number (1-65535)")
                    continue
                }
                ports.insert(port)
            }
            config.ports = ports
        }
        reader.int(object, "maxHosts", p, in: 1...100_000, into: &config.maxHosts)
        reader.int(object, "maxInFlightPerHost", p, in: 1...100_000, into: &config.maxInFlightPerHost)
        for (index, text) in strings(object["allowedDestinations"], "\(p).allowedDestinations", max: 100, &reader) {
            do {
                let allowance = try DestinationPolicy.Allowance(parsing: text)
                config.allowedDestinations.append(allowance)
                reader.warning(
                    "\(p).allowedDestinations[\(index)]",
                    "\(allowance) lets any app user's UnifiedPush endpoint reach this address range or host "
                        + "(tests, or a push server on your own network only)")
            } catch {
                reader.error("\(p).allowedDestinations[\(index)]", "\"\(text.prefix(100))\" \(error)")
            }
        }
        if let caFile = readCAFile(object, p, &reader, environment: environment) { config.caFile = caFile }
        return config
    }

    /// An optional array of at most `max` strings, with its indices; errors name the element.
    static func strings(_ value: JSONValue?, _ p: String, max: Int, _ reader: inout ConfigReader) -> [(Int, String)] {
        guard let value, !value.isNull else { return [] }
        guard let list = value.arrayValue else {
            reader.error(p, "must be an array of strings, got \(value.typeName)")
            return []
        }
        guard list.count <= max else {
            reader.error(p, "must list at most \(max) entries")
            return []
        }
        var out: [(Int, String)] = []
        for (index, element) in list.enumerated() {
            guard let text = element.stringValue else {
                reader.error("\(p)[\(index)]", "must be a string, got \(element.typeName)")
                continue
            }
            out.append((index, text))
        }
        return out
    }

    /// `["*"]` (the default) or a non-empty list of origins; `*` cannot be mixed with origins.
    static func readAllowedOrigins(_ value: JSONValue?, _ p: String, _ reader: inout ConfigReader) -> CORSOrigins? {
        guard let value, !value.isNull else { return .any }
        guard let list = value.arrayValue else {
            reader.error(p, "must be an array of origins, got \(value.typeName)")
            return nil
        }
        guard !list.isEmpty else {
            reader.error(p, "must not be empty: use [\"*\"] for any origin or list the origins")
            return nil
        }
        guard list.count <= 1000 else {
            reader.error(p, "must list at most 1000 origins")
            return nil
        }
        var origins: Set<String> = []
        var failed = false
        for (index, element) in list.enumerated() {
            guard let text = element.stringValue else {
                reader.error("\(p)[\(index)]", "must be a string, got \(element.typeName)")
                failed = true
                continue
            }
            switch CORSOrigins.parse(text) {
            case .success(let origin): origins.insert(origin)
            case .failure(let problem):
                reader.error("\(p)[\(index)]", "\"\(text.prefix(100))\" \(problem)")
                failed = true
            }
        }
        if origins.contains("*") {
            guard origins.count == 1 else {
                reader.error(p, "\"*\" allows any origin and cannot be combined with others")
                return nil
            }
            return .any
        }
        return failed ? nil : .only(origins)
    }

    /// `<p>.caFile`, with `${VAR}`s expanded, when it names a readable file (else the error is recorded).
    static func readCAFile(
        _ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> String? {
        guard let caFile = reader.string(object, "caFile", p).map({ expandVariables($0, environment) }),
            checkReadable(caFile, "\(p).caFile", &reader)
        else { return nil }
        return caFile
    }

    /// `instances[].hms`: the app ID, the OAuth client secret (inline or from a file) and endpoint overrides.
    static func readHMS(
        _ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> HMSInstanceConfig? {
        reader.checkKeys(
            object, p,
            allowed: [
                "appId", "clientId", "clientSecret", "clientSecretFile",
                "tokenEndpointOverride", "endpointOverride", "caFile",
            ])
        // The app ID goes into the send URL's path: digits only, as AppGallery Connect issues them.
        guard let appID = reader.string(object, "appId", p), !appID.isEmpty, appID.utf8.count <= 64,
            appID.utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else {
            reader.error("\(p).appId", "is required: the numeric app ID from AppGallery Connect")
            return nil
        }
        let clientID = reader.string(object, "clientId", p) ?? appID
        var secret: String?
        if let path = reader.string(object, "clientSecretFile", p).map({ expandVariables($0, environment) }) {
            if checkReadable(path, "\(p).clientSecretFile", &reader) {
                reader.secret("\(p).clientSecretFile", file: path)
                secret = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(
                    in: .whitespacesAndNewlines)
            }
        } else if let value = reader.string(object, "clientSecret", p) {
            reader.secret("\(p).clientSecret", file: nil)
            secret = expandVariables(value, environment)
        }
        guard let secret, !secret.isEmpty else {
            reader.error(
                "\(p).clientSecret",
                "is required (or clientSecretFile): the OAuth 2.0 client secret from AppGallery Connect")
            return nil
        }
        var config = HMSInstanceConfig(appID: appID, clientID: clientID, clientSecret: secret)
        for key in ["tokenEndpointOverride", "endpointOverride"] {
            guard let url = reader.string(object, key, p) else { continue }
            guard (try? HTTPURL(url))?.scheme == "https" else {
                reader.error("\(p).\(key)", "must be an https URL")
                continue
            }
            if key == "endpointOverride" { config.endpointOverride = url } else { config.tokenEndpointOverride = url }
        }
        if let caFile = readCAFile(object, p, &reader, environment: environment) { config.caFile = caFile }
        return config
    }
}
