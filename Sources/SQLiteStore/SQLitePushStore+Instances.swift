import Foundation
import PushStore
import StoreSQL

extension SQLitePushStore {
    package func storedInstances() async throws -> (version: Int64, instances: [StoredInstance]) {
        try await read { connection in try StoredInstanceSQL.instances(on: connection) }
    }

    package func storedInstancesVersion() async throws -> Int64 {
        try await read { connection in try StoredInstanceSQL.version(on: connection) }
    }

    package func changeInstance(_ change: InstanceChange, at: Date, audit: AuditEntry?) async throws
        -> InstanceChangeOutcome
    {
        // SQLite's one writer already serialises changes: each takes the version after the last one's.
        try await write { connection in try StoredInstanceSQL.change(change, at: at, audit: audit, on: connection) }
    }
}
