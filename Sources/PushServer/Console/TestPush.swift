import APNsClient
import Clocks
import ConfigModel
import Foundation
import JSON
import Logging
import PublishEngine
import PushStore

/// One notification to one device outside any publish, with Apple's whole answer. `push-server send` and the
/// console's test push (`POST …/console/test-push`) share it: the input rules, the defaults, the request and the
/// answer's fields. It is diagnostic: nothing is written to the store.
enum TestPush {
    /// The alert sent when neither an alert nor a payload is given.
    static let defaultAlert = "Test from push-server"
    /// The latest `apns-expiration` accepted (year 5138): far beyond any real use, far below where time math breaks.
    static let maxExpiration = 99_999_999_999

    /// What the caller asked for, before validation.
    struct Options: Sendable, Equatable {
        /// Hex, as typed: `<…>`, spaces and upper case are accepted (Xcode's and NSData's spellings).
        var deviceToken: String
        /// `sandbox` or `production`; nil uses the instance's `defaultEnvironment`.
        var environment: String?
        var alert: String?
        /// A JSON object's text, sent byte for byte.
        var payload: [UInt8]?
        var pushType: String?
        var priority: Int?
        /// nil uses the instance's configured topic (its bundle id).
        var topic: String?
        var collapseID: String?
        /// UNIX seconds.
        var expiration: Int?

        init(
            deviceToken: String, environment: String? = nil, alert: String? = nil, payload: [UInt8]? = nil,
            pushType: String? = nil, priority: Int? = nil, topic: String? = nil, collapseID: String? = nil,
            expiration: Int? = nil
        ) {
            self.deviceToken = deviceToken
            self.environment = environment
            self.alert = alert
            self.payload = payload
            self.pushType = pushType
            self.priority = priority
            self.topic = topic
            self.collapseID = collapseID
            self.expiration = expiration
        }
    }

    /// A rejected option, named both as the JSON field and as the command-line flag it came from.
    struct Problem: Error, Equatable, CustomStringConvertible {
        var field: String
        var flag: String
        var message: String

        var description: String { "--\(flag) \(message)" }
    }

    /// A validated test push, ready to send.
    struct Plan: Sendable {
        var request: APNsRequest
        var environment: PushEnvironment
        var apnsEnvironment: APNsEnvironment
        var credentials: APNsCredentials
    }

    /// The topics an instance's own app answers to: its configured topic and its certificate's topics, each alone
    /// and with every push type's suffix (`com.example.app`, `com.example.app.voip`, …).
    static func instanceTopics(_ apns: APNsInstanceConfig) -> Set<String> {
        let bases = [apns.topic] + (apns.certificate?.identity.certificate.topics ?? [])
        var topics: Set<String> = []
        for base in bases where !base.isEmpty {
            for type in APNsPushType.allCases { topics.insert(base + type.topicSuffix) }
        }
        return topics
    }

    /// Checks `options` against the instance's APNs settings. - Throws: the first problem found.
    /// - Parameter ownTopicsOnly: the console's test push, which an instance secret can call: the `.p8` key signs
    ///   for every app of the Apple team, so a topic outside the instance's own (`instanceTopics`) is refused. The
    ///   operator's `push-server send` passes false and may name any topic.
    static func plan(_ options: Options, instance: InstanceRuntime, ownTopicsOnly: Bool = false) throws(Problem) -> Plan
    {
        guard let credentials = instance.credentials, let apns = instance.config.apns else {
            throw Problem(
                field: "instance", flag: "instance",
                message: "has no APNs credentials (teamId, keyId, keyPath) in the config")
        }
        let token = try normalizedToken(options.deviceToken)
        var environment = apns.defaultEnvironment
        if let name = options.environment {
            guard let value = PushEnvironment(rawValue: name) else {
                throw Problem(field: "environment", flag: "environment", message: "must be sandbox or production")
            }
            environment = value
        }
        if options.alert != nil && options.payload != nil {
            throw Problem(field: "payload", flag: "payload", message: "give an alert or a payload, not both")
        }
        var payload = JSONValue.object(["aps": .object(["alert": .string(options.alert ?? defaultAlert)])]).serialized()
        if let bytes = options.payload {
            guard let value = JSONValue.parse(bytes), value.objectValue != nil else {
                throw Problem(field: "payload", flag: "payload", message: "must be a JSON object")
            }
            payload = bytes
        }
        var pushType: APNsPushType?
        if let name = options.pushType {
            guard let value = APNsPushType(rawValue: name) else {
                throw Problem(
                    field: "pushType", flag: "push-type",
                    message:
                        "must be one of \(APNsPushType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            pushType = value
        }
        var priority: APNsPriority?
        if let number = options.priority {
            guard let value = APNsPriority(rawValue: number) else {
                throw Problem(field: "priority", flag: "priority", message: "must be 10, 5 or 1")
            }
            priority = value
        }
        var expiration: Date?
        if let seconds = options.expiration {
            guard (0...maxExpiration).contains(seconds) else {
                throw Problem(field: "expiration", flag: "expiration", message: "must be UNIX seconds (0 or more)")
            }
            expiration = Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        if let id = options.collapseID, id.utf8.count > APNsHeaderRules.maxCollapseIDBytes {
            throw Problem(
                field: "collapseId", flag: "collapse-id",
                message: "must be at most \(APNsHeaderRules.maxCollapseIDBytes) bytes")
        }
        let topic = options.topic.flatMap { $0.isEmpty ? nil : $0 } ?? apns.topic
        if ownTopicsOnly, let given = options.topic, !given.isEmpty {
            let own = instanceTopics(apns)
            // The header rules add the push type's suffix to a bare bundle id: what is sent must be the app's too.
            let sent = pushType.flatMap { try? APNsHeaderRules.resolveTopic(given, pushType: $0) } ?? given
            guard own.contains(given) && own.contains(sent) else {
                throw Problem(
                    field: "topic", flag: "topic",
                    message: "must be one of this instance's topics "
                        + "(\(apns.topic) and its push-type suffixes): the key signs for every app of the team, so other "
                        + "topics are for the operator's `push-server send`")
            }
        }
        let request = APNsRequest(
            deviceToken: token, payload: payload, topic: topic, pushType: pushType,
            priority: priority, expiration: expiration, collapseID: options.collapseID,
            apnsID: UUID().uuidString.lowercased())
        return Plan(
            request: request, environment: environment, apnsEnvironment: instance.apnsEnvironment(environment),
            credentials: credentials)
    }

    /// The token as APNs wants it: `<`, `>` and white space removed, lower case, then the device API's rule
    /// (an even number of hex digits, 16 to 400).
    static func normalizedToken(_ raw: String) throws(Problem) -> String {
        let stripped = String(
            String.UnicodeScalarView(
                raw.unicodeScalars.filter {
                    $0 != "<" && $0 != ">" && !CharacterSet.whitespacesAndNewlines.contains($0)
                }))
        guard !stripped.isEmpty else {
            throw Problem(field: "deviceToken", flag: "device-token", message: "is required")
        }
        do {
            return try DeviceAPI.normalizedToken(stripped, platform: .apns)
        } catch {
            throw Problem(
                field: "deviceToken", flag: "device-token",
                message: "must be hexadecimal: an even number of digits, 16 to 400 (got \(stripped.count) characters)")
        }
    }

    /// Sends `plan` and waits for the final result (after the client's retries).
    static func send(_ plan: Plan, with client: APNsClient) async -> (result: APNsResult, duration: Duration) {
        let started = MonotonicClock.now()
        let result = await client.send(plan.request, credentials: plan.credentials, environment: plan.apnsEnvironment)
        return (result, MonotonicClock.elapsed(since: started))
    }

    /// Apple's answer field by field, without rewording, or why there is none.
    struct Answer: Sendable, Equatable {
        /// `:status`, when APNs answered (also for answers that indict the credentials).
        var status: Int?
        /// The body's `reason`, verbatim.
        var reason: String?
        var apnsID: String?
        /// Sandbox only: the key of Apple's delivery log in the Push Notifications Console.
        var apnsUniqueID: String?
        /// 410 only: when APNs learnt the token was no longer valid.
        var timestamp: Date?
        var attempts: Int?
        /// No usable answer: a local rule broke (nothing sent), the transport failed, or the key could not sign.
        var failure: String?

        init(_ result: APNsResult) {
            switch result {
            case .response(let response):
                status = response.status
                reason = response.reason?.rawValue
                apnsID = response.apnsID
                apnsUniqueID = response.apnsUniqueID
                timestamp = response.timestamp
                attempts = response.attempts
            case .failure(.configuration(.rejected(let status, let reason))):
                self.status = status
                self.reason = reason.rawValue
                failure = "APNs rejected the credentials: every request with this key fails the same way"
            case .failure(.invalidRequest(let violation)):
                reason = DeliveryOutcome.name(violation)
                failure = "not sent: the request breaks an APNs rule (\(violation))"
            case .failure(let failure):
                self.failure = "\(failure)"
            }
        }

        /// One line on what the reason means, for 4xx/5xx answers and local refusals.
        var meaning: String? {
            guard let reason, status != 200 else { return nil }
            let known = APNsReason(rawValue: reason)
            if case .unknown = known { return nil }
            return known.meaning
        }

        /// `timestamp` as milliseconds since 1970 (nil when absent or absurd).
        var timestampMillis: Int64? {
            guard let seconds = timestamp?.timeIntervalSince1970, seconds.isFinite, abs(seconds) < 1e12 else {
                return nil
            }
            return Int64((seconds * 1000).rounded())
        }

        /// `push-server send`'s output lines.
        func lines(environment: PushEnvironment) -> [String] {
            var lines = ["environment: \(environment.rawValue)"]
            if let status {
                lines.append("status: \(status)")
                lines.append("reason: \(reason ?? "-")")
                if let meaning { lines.append("meaning: \(meaning)") }
                lines.append("apns-id: \(apnsID ?? "-")")
                lines.append("apns-unique-id: \(apnsUniqueID ?? "-")")
                if let timestamp { lines.append("timestamp: \(timestamp.iso8601)") }
                if let attempts { lines.append("attempts: \(attempts)") }
            }
            if let failure { lines.append("failure: \(failure)") }
            return lines
        }

        /// The console's `answer` object.
        var json: JSONValue {
            .object([
                "status": status.map(JSONValue.int) ?? .null,
                "reason": reason.map(JSONValue.string) ?? .null,
                "meaning": meaning.map(JSONValue.string) ?? .null,
                "apnsId": apnsID.map(JSONValue.string) ?? .null,
                "apnsUniqueId": apnsUniqueID.map(JSONValue.string) ?? .null,
                "timestamp": timestampMillis.map { .int(Int($0)) } ?? .null,
                "timestampISO": timestamp.map { .string($0.iso8601) } ?? .null,
                "attempts": attempts.map(JSONValue.int) ?? .null,
                "failure": failure.map(JSONValue.string) ?? .null,
            ])
        }
    }
}
