import Logging
import PushStore
import SQL

/// Brings a database to the newest schema it knows with the shared `SchemaMigrator`, using `PRAGMA user_version` as
/// the applied step count.
struct Migrator {
    let migrations: [String]

    init(migrations: [String] = Schema.migrations) { self.migrations = migrations }

    /// Applies the missing steps, each in its own transaction with its version bump.
    /// - Returns: the version found before migrating.
    /// - Throws: `PushStoreError.unsupportedSchemaVersion` for a database from a newer program, `SQLiteError`.
    @discardableResult
    func migrate(_ connection: SQLiteConnection, logger: Logger) throws -> Int {
        try SchemaMigrator(steps: migrations).migrate(
            UserVersionHistory(connection: connection), refuse: PushStoreError.unsupportedSchemaVersion,
            applied: { logger.info("Applied schema migration", ["version": String($0)]) })
    }

    static func version(of connection: SQLiteConnection) throws -> Int {
        Int(try connection.first("PRAGMA user_version") { $0.int64(0) } ?? 0)
    }
}

/// SQLite's side of a migration: `BEGIN IMMEDIATE` takes the write lock before the version is read, and the version
/// lives in the database header, which commits atomically with the step.
private struct UserVersionHistory: SchemaHistory {
    let connection: SQLiteConnection

    func step<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            let value = try body(connection)
            try connection.execute("COMMIT")
            return value
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    func appliedVersion(_ connection: SQLiteConnection) throws -> Int { try Migrator.version(of: connection) }

    func apply(_ sql: String, as version: Int, _ connection: SQLiteConnection) throws {
        try connection.execute(sql)
        try connection.execute("PRAGMA user_version = \(version)")
    }
}
