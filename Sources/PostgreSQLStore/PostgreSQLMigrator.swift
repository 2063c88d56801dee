import Logging
import PushStore
import SQL

/// Brings a database to the newest schema this program knows with the shared `SchemaMigrator`, one migration per
/// transaction, recorded in `schema_migrations`.
///
/// Each step first takes a transaction-scoped advisory lock, so nodes starting together apply it once (the others
/// wait, then find it recorded); the lock ends with the transaction, so it also works through a pooler. A
/// `lock_timeout` keeps an `ALTER` that waits behind a long query from stalling every claim queued behind it.
struct PostgreSQLMigrator {
    /// An arbitrary constant naming "push-server schema migration" among advisory locks.
    static let lockKey: Int64 = 0x7075_7368_6d69_6772
    let migrations: [String]

    init(migrations: [String] = PostgreSQLSchema.migrations) { self.migrations = migrations }

    var newestVersion: Int { migrations.count }

    /// Applies the missing steps. - Returns: the version found before migrating.
    /// - Throws: `PushStoreError.unsupportedSchemaVersion` for a database migrated by a newer program,
    ///   `PostgreSQLError`.
    @discardableResult
    func migrate(_ session: PGSession, logger: Logger) throws -> Int {
        try SchemaMigrator(steps: migrations).migrate(
            session, refuse: PushStoreError.unsupportedSchemaVersion,
            applied: {
                logger.info("Applied schema migration", ["version": String($0), "backend": "postgresql"])
            })
    }

    /// The newest applied version (0 for an empty database).
    static func version(_ connection: PGConnection) throws -> Int {
        let result = try connection.query("SELECT coalesce(max(version), 0) FROM schema_migrations")
        return Int(result.int64(0, 0))
    }
}

/// PostgreSQL's side of a migration: the step's transaction takes the migration lock and creates the version table
/// before the version is read.
extension PGSession: SchemaHistory {
    func step<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try transaction { connection in
            try connection.execute("SET LOCAL lock_timeout = '5s'; SET LOCAL client_min_messages = warning")
            try connection.query("SELECT pg_advisory_xact_lock($1::bigint)", [.integer(PostgreSQLMigrator.lockKey)])
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            return try body(connection)
        }
    }

    func appliedVersion(_ connection: PGConnection) throws -> Int { try PostgreSQLMigrator.version(connection) }

    func apply(_ sql: String, as version: Int, _ connection: PGConnection) throws {
        try connection.execute(sql)
        try connection.run("INSERT INTO schema_migrations (version) VALUES ($1::integer)", [.integer(Int64(version))])
    }
}
