import APNsClient
import JSON

extension APNsHealth.Snapshot {
    /// The `apns` object of `/ready` and of the console's overview: reachability and the client's counters.
    func json(_ stats: APNsClientStats) -> JSONValue {
        .object([
            "state": .string(state),
            "lastAnswerAt": lastAnswer.map { .string($0.iso8601) } ?? .null,
            "lastFailureAt": lastFailure.map { .string($0.iso8601) } ?? .null,
            "lastFailure": lastFailureReason.map(JSONValue.string) ?? .null,
            "connections": .int(stats.connections),
            "streamsInFlight": .int(stats.streamsInFlight),
            "transportFailures": .int(stats.transportFailures),
            "configurationFailures": .int(stats.configurationFailures),
        ])
    }
}
