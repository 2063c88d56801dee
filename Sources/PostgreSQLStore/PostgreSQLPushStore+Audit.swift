import Foundation
import PushStore

extension PostgreSQLPushStore {
    public func appendAudit(_ entry: AuditEntry) async throws {
        try await writeAlone { connection in try Self.append(entry, connection) }
    }

    public func auditEntries(instanceID: String?, action: String?, after: Int64, limit: Int) async throws -> [AuditEntry] {
        // Only the filters given, so one instance's listing keeps its (instance_id, seq) index.
        var conditions = ["seq > $1::bigint"]
        var values: [PGValue] = [.integer(after)]
        if let instanceID { values.append(.text(instanceID)); conditions.append("instance_id = $\(values.count)") }
        if let action { values.append(.text(action)); conditions.append("action = $\(values.count)") }
        values.append(.integer(Int64(max(0, limit))))
        let sql = """
            SELECT seq, at, instance_id, actor, source, action, target, outcome, request_id FROM audit_log
            WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq LIMIT $\(values.count)::bigint
            """
        let bindings = values
        return try await read { connection in
            let result = try connection.query(sql, bindings)
            return result.map { row in
                AuditEntry(
                    seq: result.int64(row, 0), at: result.date(row, 1), instanceID: result.text(row, 2),
                    actor: result.text(row, 3), source: result.text(row, 4), action: result.text(row, 5),
                    target: result.text(row, 6), outcome: result.text(row, 7), requestID: result.text(row, 8))
            }
        }
    }

    public func pruneAudit(before: Date, limit: Int) async throws -> Int {
        try await writeAlone { connection in
            try connection.run(
                """
                DELETE FROM audit_log WHERE seq IN (
                    SELECT seq FROM audit_log WHERE at < $1::bigint ORDER BY at LIMIT $2::bigint)
                """, [.millis(before), .integer(Int64(max(0, limit)))])
        }
    }

    /// Appends `entry` inside the caller's transaction (nothing when nil).
    static func append(_ entry: AuditEntry?, _ connection: PGConnection) throws {
        guard let entry else { return }
        _ = try connection.run(
            """
            INSERT INTO audit_log (at, instance_id, actor, source, action, target, outcome, request_id)
            VALUES ($1::bigint, $2, $3, $4, $5, $6, $7, $8)
            """,
            [.millis(entry.at), .text(entry.instanceID), .text(entry.actor), .text(entry.source),
             .text(entry.action), .text(entry.target), .text(entry.outcome), .text(entry.requestID)])
    }
}
