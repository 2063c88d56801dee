import APNsClient
import Foundation
import PushStore

/// `push-server send`: one payload to one device with a real key, printing Apple's whole answer.
enum SendCommand: Command {
    static let usage = """
    Usage: push-server send --config FILE --instance ID --device-token HEX
                            [--environment sandbox|production] [--alert TEXT | --payload JSON]
                            [--push-type TYPE] [--priority 10|5|1] [--topic BUNDLE_ID] [--collapse-id ID]
                            [--expiration UNIX_SECONDS]

    Sends one notification with the instance's APNs key (from the config) and prints Apple's answer: status,
    reason, apns-id, apns-unique-id (sandbox) and, for 410, the timestamp. Default payload: an alert saying
    "Test from push-server". Default environment: the instance's defaultEnvironment.
    Exit 0 when APNs answered 200, 1 otherwise, 2 for usage errors.
    """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config", "instance", "device-token", "environment", "alert", "payload", "push-type",
                                 "priority", "topic", "collapse-id", "expiration"])
        let (config, _) = try ServerConfig.load(path: try arguments.require("config"), validateKey: APNsKeyCheck.problem)
        let instanceID = try arguments.require("instance")
        guard let instanceConfig = config.instance(instanceID) else { throw UsageError("no instance \(instanceID) in the config") }
        let runtime = try InstanceRuntime(config: instanceConfig)
        guard let credentials = runtime.credentials, let apns = instanceConfig.apns else {
            throw UsageError("instance \(instanceID) has no APNs credentials (teamId, keyId, keyPath) in the config")
        }
        let token = try arguments.require("device-token").lowercased()
        var environment = apns.defaultEnvironment
        if let name = arguments["environment"] {
            guard let value = PushEnvironment(rawValue: name) else { throw UsageError("--environment must be sandbox or production") }
            environment = value
        }
        if arguments["alert"] != nil && arguments["payload"] != nil { throw UsageError("give --alert or --payload, not both") }
        var payload = JSONValue.object(["aps": .object(["alert": .string(arguments["alert"] ?? "Test from push-server")])]).serialized()
        if let text = arguments["payload"] {
            guard let value = JSONValue.parse(Array(text.utf8)), value.objectValue != nil else {
                throw UsageError("--payload must be a JSON object")
            }
            payload = Array(text.utf8)
        }
        var pushType: APNsPushType?
        if let name = arguments["push-type"] {
            guard let value = APNsPushType(rawValue: name) else { throw UsageError("unknown --push-type \(name)") }
            pushType = value
        }
        var priority: APNsPriority?
        if let text = arguments["priority"] {
            guard let value = Int(text).flatMap(APNsPriority.init(rawValue:)) else { throw UsageError("--priority must be 10, 5 or 1") }
            priority = value
        }
        var expiration: Date?
        if let text = arguments["expiration"] {
            guard let seconds = Int(text), seconds >= 0 else { throw UsageError("--expiration must be UNIX seconds") }
            expiration = Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        let request = APNsRequest(deviceToken: token, payload: payload, topic: arguments["topic"] ?? apns.topic,
                                  pushType: pushType, priority: priority, expiration: expiration,
                                  collapseID: arguments["collapse-id"], apnsID: UUID().uuidString.lowercased())
        // A diagnostic send reports TooManyProviderTokenUpdates (its fresh token clashing with a running server's)
        // at once instead of waiting out the 20-minute floor as the server does.
        let client = try APNsClient(configuration: APNsClientConfiguration(
            connectionsPerPool: 1, streamsPerConnection: 1, retryPolicy: APNsRetryPolicy(tokenUpdateRejectedWindow: 0)))
        let result = await client.send(request, credentials: credentials, environment: runtime.apnsEnvironment(environment))
        _ = await client.shutdown(gracePeriod: 1)
        Console.out("environment: \(environment.rawValue)")
        switch result {
        case .response(let response):
            Console.out("status: \(response.status)")
            Console.out("reason: \(response.reason?.rawValue ?? "-")")
            Console.out("apns-id: \(response.apnsID ?? "-")")
            Console.out("apns-unique-id: \(response.apnsUniqueID ?? "-")")
            if let timestamp = response.timestamp { Console.out("timestamp: \(timestamp.iso8601)") }
            Console.out("attempts: \(response.attempts)")
            return response.status == 200 ? .ok : .failure
        case .failure(let failure):
            Console.out("failure: \(failure)")
            return .failure
        }
    }
}
