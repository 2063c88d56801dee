import Foundation
import PushStore

extension SQLitePushStore {
    public func appendAudit(_ entry: AuditEntry) async throws {
        try await write(tenant: entry.instanceID) { connection in try Self.append(entry, connection) }
    }

    public func auditEntries(instanceID: String?, action: String?, after: Int64, limit: Int) async throws -> [AuditEntry] {
        // Only the filters given, so one instance's listing keeps its (instance_id, seq) index.
        var conditions = ["seq > ?"]
        var values: [SQLValue] = [.integer(after)]
        if let instanceID { conditions.append("instance_id = ?"); values.append(.text(instanceID)) }
        if let action { conditions.append("action = ?"); values.append(.text(action)) }
        values.append(.integer(Int64(max(0, limit))))
        let sql = """
            SELECT seq, at, instance_id, actor, source, action, target, outcome, request_id FROM audit_log
            WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq LIMIT ?
            """
        let bindings = values
        return try await read { connection in
            var entries: [AuditEntry] = []
            try connection.query(sql, bindings) { row in
                entries.append(AuditEntry(
                    seq: row.int64(0), at: row.date(1), instanceID: row.text(2), actor: row.text(3),
                    source: row.text(4), action: row.text(5), target: row.text(6), outcome: row.text(7),
                    requestID: row.text(8)))
            }
            return entries
        }
    }

    public func pruneAudit(before: Date, limit: Int) async throws -> Int {
        try await write { connection in
            try connection.run(
                "DELETE FROM audit_log WHERE seq IN (SELECT seq FROM audit_log WHERE at < ? ORDER BY at LIMIT ?)",
                [.millis(before), .integer(Int64(max(0, limit)))])
        }
    }

    /// Appends `entry` inside the caller's transaction (nothing when nil).
    static func append(_ entry: AuditEntry?, _ connection: SQLiteConnection) throws {
        guard let entry else { return }
        _ = try connection.run(
            """
            INSERT INTO audit_log (at, instance_id, actor, source, action, target, outcome, request_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.millis(entry.at), .text(entry.instanceID), .text(entry.actor), .text(entry.source), .text(entry.action),
             .text(entry.target), .text(entry.outcome), .text(entry.requestID)])
    }
}
