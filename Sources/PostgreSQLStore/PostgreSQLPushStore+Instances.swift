import Foundation
import PushStore

extension PostgreSQLPushStore {
    /// The channel every node LISTENs on for changes to the stored instances (the payload is the new version).
    static let instancesChannel = "push_server_instances"

    public func storedInstances() async throws -> (version: Int64, instances: [StoredInstance]) {
        try await read { connection in
            let version = try Self.instancesVersion(connection)
            let result = try connection.query(
                """
                SELECT id, definition, version, created_at, updated_at FROM stored_instances
                WHERE deleted_at IS NULL ORDER BY created_at, id
                """)
            let rows = result.map { row in
                StoredInstance(id: result.text(row, 0), sealedDefinition: result.text(row, 1),
                               version: result.int64(row, 2), createdAt: result.date(row, 3),
                               updatedAt: result.date(row, 4))
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
        try await writeAlone { connection in
            // One writer of the set at a time: two concurrent changes must not both take the same next version (a
            // node that read the first would never see the second). Instance changes are rare; readers never wait.
            _ = try connection.run("LOCK TABLE stored_instances IN SHARE ROW EXCLUSIVE MODE")
            let id = change.id.lowercased()
            let found = try connection.query(
                "SELECT version FROM stored_instances WHERE id = $1 AND deleted_at IS NULL", [.text(id)])
            let current = found.first { found.int64($0, 0) }
            let next = try Self.instancesVersion(connection) + 1
            // Every check comes before the first write, so a refused change writes nothing.
            switch change {
            case .create(_, let sealed):
                if current != nil { return .exists }
                _ = try connection.run(
                    """
                    INSERT INTO stored_instances (id, definition, version, created_at, updated_at, deleted_at)
                    VALUES ($1, $2, $3::bigint, $4::bigint, $4::bigint, NULL)
                    ON CONFLICT (id) DO UPDATE SET definition = $2, version = $3::bigint, created_at = $4::bigint,
                        updated_at = $4::bigint, deleted_at = NULL
                    """, [.text(id), .text(sealed), .integer(next), .millis(at)])
            case .update(_, let sealed, let expected):
                guard let current else { return .notFound }
                if let expected, expected != current { return .versionMismatch(current: current) }
                _ = try connection.run(
                    """
                    UPDATE stored_instances SET definition = $1, version = $2::bigint, updated_at = $3::bigint
                    WHERE id = $4
                    """, [.text(sealed), .integer(next), .millis(at), .text(id)])
            case .delete(_, let expected):
                guard let current else { return .notFound }
                if let expected, expected != current { return .versionMismatch(current: current) }
                _ = try connection.run(
                    """
                    UPDATE stored_instances SET definition = '', version = $1::bigint, updated_at = $2::bigint,
                        deleted_at = $2::bigint WHERE id = $3
                    """, [.integer(next), .millis(at), .text(id)])
            }
            try Self.append(audit, connection)
            // Transactional: sent at COMMIT, and only if it commits.
            _ = try connection.query("SELECT pg_notify($1, $2)", [.text(Self.instancesChannel), .text(String(next))])
            return .applied(version: next)
        }
    }

    private static func instancesVersion(_ connection: PGConnection) throws -> Int64 {
        let result = try connection.query("SELECT coalesce(max(version), 0) FROM stored_instances")
        return result.first { result.int64($0, 0) } ?? 0
    }
}
