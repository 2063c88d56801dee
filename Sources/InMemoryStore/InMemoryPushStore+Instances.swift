import Foundation
import PushStore

extension InMemoryPushStore {
    package func storedInstances() async throws -> (version: Int64, instances: [StoredInstance]) {
        try access { state in
            let live = state.storedInstances.values.filter { !$0.deleted }.map(\.row)
                .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
            return (state.storedInstancesVersion, live)
        }
    }

    package func storedInstancesVersion() async throws -> Int64 {
        try access { $0.storedInstancesVersion }
    }

    package func changeInstance(_ change: InstanceChange, at: Date, audit: AuditEntry?) async throws
        -> InstanceChangeOutcome
    {
        try access { state in
            let id = change.id.lowercased()
            let existing = state.storedInstances[id]
            let live = existing.flatMap { $0.deleted ? nil : $0.row }
            let next = state.storedInstancesVersion + 1
            let at = at.stored
            switch change {
            case .create(_, let sealed):
                if live != nil { return .exists }
                state.storedInstances[id] = (
                    StoredInstance(
                        id: id, sealedDefinition: sealed, version: next,
                        createdAt: at, updatedAt: at), false
                )
            case .update(_, let sealed, let expected):
                guard var row = live else { return .notFound }
                if let expected, expected != row.version { return .versionMismatch(current: row.version) }
                row.sealedDefinition = sealed
                row.version = next
                row.updatedAt = at
                state.storedInstances[id] = (row, false)
            case .delete(_, let expected):
                guard var row = live else { return .notFound }
                if let expected, expected != row.version { return .versionMismatch(current: row.version) }
                row.sealedDefinition = ""
                row.version = next
                row.updatedAt = at
                state.storedInstances[id] = (row, true)
            }
            state.storedInstancesVersion = next
            state.appendAudit(audit)
            return .applied(version: next)
        }
    }
}
