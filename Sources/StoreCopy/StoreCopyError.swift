/// Why a store move refused or stopped. Every case says what to do about it.
package enum StoreCopyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The source cannot be opened or read as a push-server database.
    case unreadableSource(String)
    /// A schema other than the newest this program knows (`found`, `newest`) on the source or target.
    case schemaVersion(side: String, backend: Backend, found: Int, newest: Int)
    /// The target already holds rows (table → count) and `--replace` was not given.
    case targetNotEmpty([String: Int64])
    /// A table neither copied nor deliberately skipped (`CopyPlan`): a migration this copy does not know.
    case unhandledTables(backend: Backend, tables: [String])
    /// Columns of a copied table that the plan does not know: a migration this copy does not know.
    case unhandledColumns(backend: Backend, table: String, columns: [String])
    /// A value that does not read as its column's type.
    case unreadableValue(table: String, column: String, backend: Backend)
    /// The source has shards of a publish being delivered, which SQLite cannot represent.
    case openShards(Int64)
    /// Source and target are the same kind of store.
    case sameBackend(Backend)

    package var description: String {
        switch self {
        case .unreadableSource(let reason):
            return "cannot read the source: \(reason)"
        case .schemaVersion(let side, let backend, let found, let newest):
            return "the \(side) \(backend) database is at schema version \(found), this program writes \(newest): "
                + (found < newest
                    ? "start this version of push-server on it once (it migrates), then copy"
                    : "use the push-server version that migrated it")
        case .targetNotEmpty(let counts):
            let list = counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "the target is not empty (\(list)); copy into a new database, or pass --replace to delete "
                + "everything in it first"
        case .unhandledTables(let backend, let tables):
            return "the \(backend) database has tables this copy does not know: \(tables.joined(separator: ", ")) "
                + "(a newer schema? use the push-server version that created it)"
        case .unhandledColumns(let backend, let table, let columns):
            return "the \(backend) table \(table) has columns this copy does not know: "
                + "\(columns.joined(separator: ", ")) (a newer schema? use the push-server version that created it)"
        case .unreadableValue(let table, let column, let backend):
            return "a value in \(table).\(column) on \(backend) does not read as that column's type"
        case .openShards(let count):
            return "the source has \(count) shard(s) of publishes still being delivered, which SQLite cannot hold; "
                + "let them finish (or cancel them) before copying to SQLite"
        case .sameBackend(let backend):
            return "source and target are both \(backend); copy-store moves between SQLite and PostgreSQL "
                + "(for a copy of the same kind use sqlite3 .backup / VACUUM INTO, or pg_dump)"
        }
    }
}
