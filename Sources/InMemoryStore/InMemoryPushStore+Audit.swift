import Foundation
import PushStore

extension InMemoryPushStore {
    package func appendAudit(_ entry: AuditEntry) async throws {
        try access { $0.appendAudit(entry) }
    }

    package func auditEntries(instanceID: String?, action: String?, after: Int64, limit: Int) async throws
        -> [AuditEntry]
    {
        try access { state in
            Array(
                state.audit.lazy.filter { entry in
                    entry.seq > after && instanceID.map { entry.instanceID == $0 } ?? true
                        && action.map { entry.action == $0 } ?? true
                }.prefix(max(0, limit)))
        }
    }

    package func pruneAudit(before: Date, limit: Int) async throws -> Int {
        try access { state in
            let cutoff = before.stored
            var removed = 0
            state.audit.removeAll { entry in
                guard removed < limit, entry.at < cutoff else { return false }
                removed += 1
                return true
            }
            return removed
        }
    }
}

extension InMemoryState {
    /// Appends `entry` (nothing when nil) with the next sequence number, at the backends' millisecond precision.
    mutating func appendAudit(_ entry: AuditEntry?) {
        guard var entry else { return }
        lastAuditSeq += 1
        entry.seq = lastAuditSeq
        entry.at = entry.at.stored
        audit.append(entry)
    }
}
