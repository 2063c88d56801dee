import Foundation
import PostgreSQLStore

/// A PostgreSQL database as one end of a store move, through its own connection.
///
/// As a source it is read in one `REPEATABLE READ READ ONLY` transaction (one snapshot for every table, while the
/// nodes go on writing) with `COPY (SELECT …) TO STDOUT`. As a target it is written in one transaction with
/// `COPY … FROM STDIN`, the count triggers switched off meanwhile (`CopyPlan.postgresqlCountTriggers`), the counts
/// loaded from the source instead, the foreign keys dropped and added again (one check per table instead of one per
/// row), and the identity sequences moved past the copied ids before COMMIT.
package final class PostgreSQLSide: StoreSide {
    package let backend = Backend.postgresql
    private let connection: PGConnection
    /// The foreign keys of the loaded tables, dropped during the load and added again before COMMIT:
    /// (table, constraint name, definition).
    private var foreignKeys: [(table: String, name: String, definition: String)] = []
    /// Rows are sent in chunks of about this many bytes (one `PQputCopyData` each).
    private static let chunkBytes = 1 << 20

    /// Connects with a libpq connection string.
    /// - Throws: `StoreCopyError.unreadableSource` (as a source) or `PostgreSQLError` when it cannot connect.
    package init(connectionString: String, asSource: Bool) throws {
        do {
            connection = try PGConnection(connectionString: connectionString)
            try connection.execute("SET client_min_messages = warning")
        } catch let error as PostgreSQLError where asSource {
            throw StoreCopyError.unreadableSource(error.message)
        }
    }

    deinit { connection.close() }

    package func schemaVersion() throws -> (found: Int, newest: Int) {
        let exists = try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL").bool(0, 0)
        let found =
            exists ? try connection.query("SELECT coalesce(max(version), 0) FROM schema_migrations").int64(0, 0) : 0
        return (Int(found), PostgreSQLPushStore.newestSchemaVersion)
    }

    package func tableNames() throws -> [String] {
        let result = try connection.query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
        return (0..<result.rowCount).map { result.text($0, 0) }
    }

    package func columnNames(_ table: String) throws -> [String] {
        let result = try connection.query(
            """
            SELECT column_name::text FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position
            """, [.text(table)])
        return (0..<result.rowCount).map { result.text($0, 0) }
    }

    package func beginSnapshot() throws {
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        // The snapshot is taken by the first statement, not by BEGIN.
        _ = try connection.query("SELECT 1")
    }

    package func endSnapshot() throws { try connection.execute("COMMIT") }

    package func count(_ table: CopyTable) throws -> Int64 {
        try connection.query("SELECT count(*) FROM \(table.postgresqlTable)").int64(0, 0)
    }

    package func read(_ table: CopyTable, _ row: ([PortableValue]) throws -> Void) throws {
        let columns = table.columns
        var values = [PortableValue](repeating: .null, count: columns.count)
        try connection.copyOut(table.postgresqlCopyOut) { line in
            let fields = CopyText.fields(line)
            guard fields.count == columns.count else {
                throw StoreCopyError.unreadableValue(table: table.name, column: "*", backend: .postgresql)
            }
            for index in 0..<columns.count {
                values[index] = try CopyText.value(
                    fields[index], as: columns[index].type, table: table.name,
                    column: columns[index].name)
            }
            try row(values)
        }
    }

    package func sequenceMark(_ table: CopyTable) throws -> Int64? {
        let sequence = try connection.query(
            "SELECT pg_get_serial_sequence($1, $2)",
            [.text(table.postgresqlTable), .text(table.identityColumn)])
        guard let name = sequence.optionalText(0, 0) else { return nil }
        // A sequence is read outside any snapshot: its mark is at least the largest id the snapshot holds.
        let state = try connection.query("SELECT last_value, is_called FROM \(name)")
        let last = state.int64(0, 0)
        return state.bool(0, 1) ? last : last - 1
    }

    package func openShards() throws -> Int64 {
        try connection.query("SELECT count(*) FROM publish_shards").int64(0, 0)
    }

    package func beginLoad(replace: Bool) throws {
        try connection.execute("BEGIN")
        if replace {
            let names = CopyPlan.tables.map(\.postgresqlTable) + ["publish_shards"]
            try connection.execute("TRUNCATE \(names.joined(separator: ", ")) RESTART IDENTITY")
        }
        for (table, trigger) in CopyPlan.postgresqlCountTriggers {
            try connection.execute("ALTER TABLE \(table) DISABLE TRIGGER \(trigger)")
        }
        // A foreign key checks each inserted row with a query of its own (2M subscriptions: 4M lookups); added
        // again after the load, it checks the whole table in one join, and any orphan still fails the COPY's
        // transaction. Read from the catalog, so a key a later migration adds is handled the same way.
        let tables = CopyPlan.tables.map(\.postgresqlTable)
        let keys = try connection.query(
            """
            SELECT conrelid::regclass::text, conname::text, pg_get_constraintdef(oid) FROM pg_constraint
            WHERE contype = 'f' AND connamespace = current_schema()::regnamespace
              AND conrelid::regclass::text = ANY($1::text[])
            ORDER BY 1, 2
            """, [.textArray(tables)])
        foreignKeys = (0..<keys.rowCount).map { (keys.text($0, 0), keys.text($0, 1), keys.text($0, 2)) }
        for key in foreignKeys {
            try connection.execute("ALTER TABLE \(key.table) DROP CONSTRAINT \(key.name)")
        }
    }

    package func load(_ table: CopyTable, _ produce: (_ write: ([PortableValue]) throws -> Void) throws -> Void) throws
    {
        try connection.copyIn(table.postgresqlCopyIn) { send in
            // `send` is only called while `produce` runs; it never outlives this closure.
            try withoutActuallyEscaping(send) { send in
                var buffer: [UInt8] = []
                buffer.reserveCapacity(Self.chunkBytes + 4096)
                try produce { row in
                    CopyText.appendRow(row, to: &buffer)
                    if buffer.count >= Self.chunkBytes {
                        try buffer.withUnsafeBytes(send)
                        buffer.removeAll(keepingCapacity: true)
                    }
                }
                try buffer.withUnsafeBytes(send)
            }
        }
    }

    package func commitLoad(marks: [String: Int64]) throws {
        for key in foreignKeys {
            try connection.execute("ALTER TABLE \(key.table) ADD CONSTRAINT \(key.name) \(key.definition)")
        }
        foreignKeys = []
        for (table, trigger) in CopyPlan.postgresqlCountTriggers {
            try connection.execute("ALTER TABLE \(table) ENABLE TRIGGER \(trigger)")
        }
        for table in CopyPlan.tables where table.identity {
            let mark = marks[table.name] ?? 0
            // The next id is past both the largest copied id and the source's counter (`setval`'s minimum is 1:
            // an empty table keeps its fresh sequence).
            let column = table.identityColumn
            try connection.query(
                """
                SELECT setval(pg_get_serial_sequence($1, $3), greatest(max(\(column)), $2::bigint))
                FROM \(table.postgresqlTable) HAVING greatest(max(\(column)), $2::bigint) > 0
                """, [.text(table.postgresqlTable), .integer(mark), .text(column)])
        }
        try connection.execute("COMMIT")
    }

    package func rollbackLoad() {
        foreignKeys = []
        try? connection.execute("ROLLBACK")
    }
}

@available(*, unavailable, message: "A copy side belongs to the thread running the copy")
extension PostgreSQLSide: Sendable {}
