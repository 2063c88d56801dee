/// What a backend gives `SchemaMigrator`: a transaction for one step and the place it records how many steps are
/// applied. SQLite keeps the count in `PRAGMA user_version` (in the file's header, committed with the step);
/// PostgreSQL keeps one row per step in `schema_migrations` and serialises migrating nodes with an advisory lock
/// taken in `step`.
package protocol SchemaHistory {
    /// The connection a step's statements run on, inside the transaction `step` opened.
    associatedtype Connection

    /// Runs `body` in a transaction of its own that commits when it returns and rolls back when it throws, holding
    /// whatever keeps two migrators of one database apart until it ends.
    func step<T>(_ body: (Connection) throws -> T) throws -> T

    /// How many steps the database has applied (0 for an empty one), read inside the step's transaction.
    func appliedVersion(_ connection: Connection) throws -> Int

    /// Runs one step's SQL text (any number of statements, run as written) and records `version` as applied, in
    /// the same transaction, so a step and its record commit together or not at all.
    func apply(_ sql: String, as version: Int, _ connection: Connection) throws
}

/// Brings a database to the newest schema a program knows: an ordered list of steps, where step `n` (1-based) takes
/// the database from version `n - 1` to `n`. Each step runs in its own transaction, which first reads the version
/// again (so a migrator that waited behind another finds its work done); a database newer than the list is refused
/// before anything is written. Steps are appended, never edited: databases in the field have applied them.
package struct SchemaMigrator: Sendable {
    /// The SQL text of each step, in order.
    package let steps: [String]

    /// - Parameter steps: the SQL text of each step, in order.
    package init(steps: [String]) { self.steps = steps }

    /// The version the last step leaves a database at.
    package var newestVersion: Int { steps.count }

    /// Applies the steps `history`'s database lacks, one transaction each.
    /// - Parameters:
    ///   - refuse: the error for a database at version `found`, newer than `newestKnown`.
    ///   - applied: told each version once its step has committed (to log it).
    /// - Returns: the version found before migrating.
    /// - Throws: what `refuse` returns; what `history` throws (the failed step is rolled back, those before it stay).
    @discardableResult
    package func migrate<History: SchemaHistory>(
        _ history: History, refuse: (_ found: Int, _ newestKnown: Int) -> any Error,
        applied: (Int) -> Void = { _ in }
    ) throws -> Int {
        var found: Int?
        while true {
            let version: Int? = try history.step { connection in
                let current = try history.appliedVersion(connection)
                if found == nil { found = current }
                guard current <= newestVersion else { throw refuse(current, newestVersion) }
                guard current < newestVersion else { return nil }
                try history.apply(steps[current], as: current + 1, connection)
                return current + 1
            }
            guard let version else { break }
            applied(version)
        }
        return found ?? 0
    }
}
