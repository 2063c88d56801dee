import Logging
import PushStore

/// Brings a database to the newest schema it knows, using `PRAGMA user_version` as the applied step count.
struct Migrator {
    let migrations: [String]

    init(migrations: [String] = Schema.migrations) { self.migrations = migrations }

    /// The schema version this program writes.
    var newestVersion: Int { migrations.count }

    /// Applies the missing steps, each in its own transaction with its version bump.
    /// - Returns: the version found before migrating.
    /// - Throws: `PushStoreError.unsupportedSchemaVersion` for a database from a newer program, `SQLiteError`.
    @discardableResult
    func migrate(_ connection: SQLiteConnection, logger: Logger) throws -> Int {
        let found = try Migrator.version(of: connection)
        guard found <= newestVersion else {
            throw PushStoreError.unsupportedSchemaVersion(found: found, newestKnown: newestVersion)
        }
        for version in (found + 1)..<(newestVersion + 1) {
            try connection.execute("BEGIN IMMEDIATE")
            do {
                try connection.execute(migrations[version - 1])
                // The version lives in the database header, which commits atomically with the step.
                try connection.execute("PRAGMA user_version = \(version)")
                try connection.execute("COMMIT")
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
            logger.info("Applied schema migration", ["version": String(version)])
        }
        return found
    }

    static func version(of connection: SQLiteConnection) throws -> Int {
        Int(try connection.first("PRAGMA user_version") { $0.int64(0) } ?? 0)
    }
}
