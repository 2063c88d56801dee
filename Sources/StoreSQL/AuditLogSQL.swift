import Foundation
import PushStore
import SQL

/// The audit log's statements, the same on SQLite and PostgreSQL; each runs inside the caller's transaction.
package enum AuditLogSQL {
    /// Appends `entry` (nothing when nil): the change it records commits or rolls back with it.
    package static func append(_ entry: AuditEntry?, on connection: some SQLConnection) throws {
        guard let entry else { return }
        try connection.perform(
            """
            INSERT INTO audit_log (at, instance_id, actor, source, action, target, outcome, request_id)
            VALUES (\(entry.at), \(entry.instanceID), \(entry.actor), \(entry.source), \(entry.action), \
            \(entry.target), \(entry.outcome), \(entry.requestID))
            """)
    }

    /// Entries after `seq` `after`, oldest first, at most `limit`: of one instance (nil: every instance, the
    /// server-wide log) and of one action (nil: every action).
    package static func entries(
        instanceID: String?, action: String?, after: Int64, limit: Int, on connection: some SQLConnection
    ) throws -> [AuditEntry] {
        // Only the filters given, so one instance's listing keeps its (instance_id, seq) index.
        var filters: SQLQuery = ""
        if let instanceID { filters.append(" AND instance_id = \(instanceID)") }
        if let action { filters.append(" AND action = \(action)") }
        return try connection.fetchAll(
            """
            SELECT seq, at, instance_id, actor, source, action, target, outcome, request_id FROM audit_log
            WHERE seq > \(after)\(filters) ORDER BY seq LIMIT \(max(0, limit))
            """
        ) { row in
            AuditEntry(
                seq: try row.decode("seq"), at: try row.date("at"), instanceID: try row.decode("instance_id"),
                actor: try row.decode("actor"), source: try row.decode("source"), action: try row.decode("action"),
                target: try row.decode("target"), outcome: try row.decode("outcome"),
                requestID: try row.decode("request_id"))
        }
    }

    /// Deletes at most `limit` entries older than `before`, oldest first; returns how many.
    package static func prune(before: Date, limit: Int, on connection: some SQLConnection) throws -> Int {
        try connection.perform(
            """
            DELETE FROM audit_log WHERE seq IN (
                SELECT seq FROM audit_log WHERE at < \(before) ORDER BY at LIMIT \(max(0, limit)))
            """)
    }
}
