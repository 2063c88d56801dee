import APNsClient
import JSON
import Logging

extension APNsHealth.Snapshot {
    /// The `apns` object of `/ready` and of the console's overview: reachability and the client's counters.
    package func json(_ stats: APNsClientStats) -> JSONValue {
        .object([
            "state": .string(state),
            "lastAnswerAt": lastAnswer.map { .string(LogFormat.timestamp($0)) } ?? .null,
            "lastFailureAt": lastFailure.map { .string(LogFormat.timestamp($0)) } ?? .null,
            "lastFailure": lastFailureReason.map(JSONValue.string) ?? .null,
            "connections": .int(stats.connections),
            "streamsInFlight": .int(stats.streamsInFlight),
            "transportFailures": .int(stats.transportFailures),
            "configurationFailures": .int(stats.configurationFailures),
        ])
    }
}
