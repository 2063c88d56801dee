import Foundation
import PushStore
import StoreSQL

extension SQLitePushStore {

    package func changeInstance(_ change: InstanceChange, at: Date, audit: AuditEntry?) async throws
        -> InstanceChangeOutcome
    {
        // SQLite's one writer already serialises changes: each takes the version after the last one's.
        try await write { connection in try StoredInstanceSQL.change(change, at: at, audit: audit, on: connection) }
    }
}
