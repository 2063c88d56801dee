import APNsClient
import PublishEngine

/// `push-server send`: one payload to one device with a real key, printing Apple's whole answer.
enum SendCommand: Command {
    static let usage = """
        Usage: push-server send --config FILE --instance ID --device-token HEX
                                [--environment sandbox|production] [--alert TEXT | --payload JSON]
                                [--push-type TYPE] [--priority 10|5|1] [--topic BUNDLE_ID] [--collapse-id ID]
                                [--expiration UNIX_SECONDS]

        Sends one notification with the instance's APNs key (from the config, or from the store for a run-time
        instance) and prints Apple's answer: status, reason, apns-id, apns-unique-id (sandbox) and, for 410, the
        timestamp. Default payload: an alert saying "Test from push-server". Default environment: the instance's
        defaultEnvironment.
        Exit 0 when APNs answered 200, 1 otherwise, 2 for usage errors.
        """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly([
            "config", "instance", "device-token", "environment", "alert", "payload", "push-type",
            "priority", "topic", "collapse-id", "expiration",
        ])
        let (config, _) = try ServerConfig.load(
            path: try arguments.require("config"), validateKey: APNsKeyCheck.problem)
        let instanceID = try arguments.require("instance")
        let instanceConfig = try await CommandInstance.find(
            instanceID, config: config,
            validateKey: APNsKeyCheck.problem)
        let runtime = try InstanceRuntime(config: instanceConfig)
        var options = TestPush.Options(
            deviceToken: try arguments.require("device-token"),
            environment: arguments["environment"], alert: arguments["alert"],
            payload: arguments["payload"].map { Array($0.utf8) },
            pushType: arguments["push-type"], topic: arguments["topic"],
            collapseID: arguments["collapse-id"])
        if let text = arguments["priority"] {
            guard let value = Int(text) else { throw UsageError("--priority must be 10, 5 or 1") }
            options.priority = value
        }
        if let text = arguments["expiration"] {
            guard let value = Int(text) else { throw UsageError("--expiration must be UNIX seconds") }
            options.expiration = value
        }
        let plan: TestPush.Plan
        do {
            plan = try TestPush.plan(options, instance: runtime)
        } catch {
            throw UsageError(error.field == "instance" ? "instance \(instanceID) \(error.message)" : error.description)
        }
        // A diagnostic send reports TooManyProviderTokenUpdates (its fresh token clashing with a running server's)
        // at once instead of waiting out the 20-minute floor as the server does.
        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                connectionsPerPool: 1, streamsPerConnection: 1,
                retryPolicy: APNsRetryPolicy(tokenUpdateRejectedWindow: 0)))
        let answer = TestPush.Answer(await TestPush.send(plan, with: client).result)
        _ = await client.shutdown(gracePeriod: .seconds(1))
        for line in answer.lines(environment: plan.environment) { Console.out(line) }
        return answer.status == 200 ? .ok : .failure
    }
}
