import Foundation
import PushStore

extension SQLitePushStore {
    public func storedInstances() async throws -> (version: Int64, instances: [StoredInstance]) {
        try await read { connection in
            let version = try Self.instancesVersion(connection)
            var rows: [StoredInstance] = []
            try connection.query(
                """
                SELECT id, definition, version, created_at, updated_at FROM stored_instances
                WHERE deleted_at IS NULL ORDER BY created_at, id
                """
            ) { row in
                rows.append(StoredInstance(id: row.text(0), sealedDefinition: row.text(1), version: row.int64(2),
                                           createdAt: row.date(3), updatedAt: row.date(4)))
            }
            return (version, rows)
        }
    }

    public func storedInstancesVersion() async throws -> Int64 {
        try await read { connection in try Self.instancesVersion(connection) }
    }

    public func changeInstance(_ change: InstanceChange, at: Date, audit: AuditEntry?) async throws
        -> InstanceChangeOutcome
    {
        try await write { connection in
            let id = change.id.lowercased()
            let current = try connection.first(
                "SELECT version FROM stored_instances WHERE id = ? AND deleted_at IS NULL", [.text(id)]
            ) { $0.int64(0) }
            let next = try Self.instancesVersion(connection) + 1
            // Every check comes before the first write, so a refused change writes nothing.
            switch change {
            case .create(_, let sealed):
                if current != nil { return .exists }
                _ = try connection.run(
                    """
                    INSERT INTO stored_instances (id, definition, version, created_at, updated_at, deleted_at)
                    VALUES (?1, ?2, ?3, ?4, ?4, NULL)
                    ON CONFLICT (id) DO UPDATE SET definition = ?2, version = ?3, created_at = ?4, updated_at = ?4,
                        deleted_at = NULL
                    """, [.text(id), .text(sealed), .integer(next), .millis(at)])
            case .update(_, let sealed, let expected):
                guard let current else { return .notFound }
                if let expected, expected != current { return .versionMismatch(current: current) }
                _ = try connection.run(
                    "UPDATE stored_instances SET definition = ?, version = ?, updated_at = ? WHERE id = ?",
                    [.text(sealed), .integer(next), .millis(at), .text(id)])
            case .delete(_, let expected):
                guard let current else { return .notFound }
                if let expected, expected != current { return .versionMismatch(current: current) }
                _ = try connection.run(
                    "UPDATE stored_instances SET definition = '', version = ?1, updated_at = ?2, deleted_at = ?2 WHERE id = ?3",
                    [.integer(next), .millis(at), .text(id)])
            }
            try Self.append(audit, connection)
            return .applied(version: next)
        }
    }

    private static func instancesVersion(_ connection: SQLiteConnection) throws -> Int64 {
        try connection.first("SELECT coalesce(max(version), 0) FROM stored_instances") { $0.int64(0) } ?? 0
    }
}
