import Foundation
import PushStore
import StoreSQL

extension PostgreSQLPushStore {
    /// The channel every node LISTENs on for changes to the stored instances (the payload is the new version).
    static let instancesChannel = "push_server_instances"

    package func changeInstance(_ change: InstanceChange, at: Date, audit: AuditEntry?) async throws
        -> InstanceChangeOutcome
    {
        try await writeAlone { connection in
            // One writer of the set at a time: two concurrent changes must not both take the same next version (a
            // node that read the first would never see the second). Instance changes are rare; readers never wait.
            _ = try connection.run("LOCK TABLE stored_instances IN SHARE ROW EXCLUSIVE MODE")
            let outcome = try StoredInstanceSQL.change(change, at: at, audit: audit, on: connection)
            if case .applied(let version) = outcome {
                // Transactional: sent at COMMIT, and only if it commits.
                _ = try connection.query(
                    "SELECT pg_notify($1, $2)",
                    [.text(Self.instancesChannel), .text(String(version))])
            }
            return outcome
        }
    }
}
