import Foundation
import PushStore
import SQL

/// The `stored_instances` statements (run-time instances), the same on SQLite and PostgreSQL; each runs inside
/// the caller's transaction. The store keeps what differs: PostgreSQL locks the table for the change (one writer
/// of the set's version at a time) and announces the new version (NOTIFY); SQLite's one writer needs neither.
package enum StoredInstanceSQL {
    /// The live stored instances (oldest first) and the set's version, read in the caller's transaction.
    package static func instances(on connection: some SQLConnection) throws
        -> (version: Int64, instances: [StoredInstance])
    {
        let version = try self.version(on: connection)
        let rows = try connection.fetchAll(
            """
            SELECT id, definition, version, created_at, updated_at FROM stored_instances
            WHERE deleted_at IS NULL ORDER BY created_at, id
            """
        ) { row in
            StoredInstance(
                id: try row.decode("id"), sealedDefinition: try row.decode("definition"),
                version: try row.decode("version"), createdAt: try row.date("created_at"),
                updatedAt: try row.date("updated_at"))
        }
        return (version, rows)
    }

    /// The set's version: the highest of any row, deleted ones included (0 before any change).
    package static func version(on connection: some SQLConnection) throws -> Int64 {
        try connection.fetchOne("SELECT coalesce(max(version), 0) AS version FROM stored_instances") { row in
            try row.decode("version", as: Int64.self)
        } ?? 0
    }

    /// Applies `change` at `at` with the set's next version and appends `audit`; every check comes before the
    /// first write, so a refused change writes nothing (its audit entry included).
    package static func change(
        _ change: InstanceChange, at: Date, audit: AuditEntry?,
        on connection: some SQLConnection
    ) throws -> InstanceChangeOutcome {
        let id = change.id.lowercased()
        let current = try connection.fetchOne(
            """
            SELECT version FROM stored_instances WHERE id = \(id) AND deleted_at IS NULL
            """
        ) { row in try row.decode("version", as: Int64.self) }
        let next = try version(on: connection) + 1
        switch change {
        case .create(_, let sealed):
            if current != nil { return .exists }
            // A deleted row with the id is taken over (its devices and history belong to the id).
            try connection.perform(
                """
                INSERT INTO stored_instances (id, definition, version, created_at, updated_at, deleted_at)
                VALUES (\(id), \(sealed), \(next), \(at), \(at), NULL)
                ON CONFLICT (id) DO UPDATE SET definition = excluded.definition, version = excluded.version,
                    created_at = excluded.created_at, updated_at = excluded.updated_at, deleted_at = NULL
                """)
        case .update(_, let sealed, let expected):
            guard let current else { return .notFound }
            if let expected, expected != current { return .versionMismatch(current: current) }
            try connection.perform(
                """
                UPDATE stored_instances SET definition = \(sealed), version = \(next), updated_at = \(at)
                WHERE id = \(id)
                """)
        case .delete(_, let expected):
            guard let current else { return .notFound }
            if let expected, expected != current { return .versionMismatch(current: current) }
            try connection.perform(
                """
                UPDATE stored_instances SET definition = '', version = \(next), updated_at = \(at), deleted_at = \(at)
                WHERE id = \(id)
                """)
        }
        try AuditLogSQL.append(audit, on: connection)
        return .applied(version: next)
    }
}
