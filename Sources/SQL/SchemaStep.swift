/// A schema migration step written once for both backends: its changes render to the SQL text each backend's
/// step list holds (`SchemaMigrator` runs that text), so a new table, index or column costs one declaration instead
/// of two dialect copies. Steps already released stay the text they were; only new steps are written this way.
///
///     static let step = SchemaStep(
///         .createTable(SchemaTable("notes", columns: [SchemaColumn("id", .identity), SchemaColumn("body", .blob)])),
///         .createIndex(SchemaIndex("notes_by_body", on: "notes", ["body"])))
///     step.sql(in: .sqlite)       // "CREATE TABLE notes (\n    id INTEGER PRIMARY KEY,\n    body BLOB NOT NULL\n);\n…"
///     step.sql(in: .postgresql)   // "…id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n    body bytea NOT NULL…"
package struct SchemaStep: Sendable, Equatable {
    /// The changes, applied in order.
    package var changes: [SchemaChange]

    package init(_ changes: SchemaChange...) { self.changes = changes }

    /// The step's SQL text in `dialect`: each change's statements, one after another on lines of their own.
    package func sql(in dialect: SQLDialect) -> String {
        changes.map { $0.sql(in: dialect) }.joined(separator: "\n")
    }
}

/// One change of a `SchemaStep`.
package enum SchemaChange: Sendable, Equatable {
    /// `CREATE TABLE`.
    case createTable(SchemaTable)
    /// `CREATE [UNIQUE] INDEX`.
    case createIndex(SchemaIndex)
    /// Columns added to an existing table: one `ALTER TABLE … ADD COLUMN` each on SQLite, which adds one column
    /// per statement; one `ALTER TABLE` with every `ADD COLUMN` on PostgreSQL, which rewrites the catalog once.
    case addColumns(table: String, [SchemaColumn])

    /// The change's statements in `dialect`.
    package func sql(in dialect: SQLDialect) -> String {
        switch self {
        case .createTable(let table):
            return table.createStatement(in: dialect)
        case .createIndex(let index):
            return index.createStatement(in: dialect)
        case .addColumns(let table, let columns):
            let additions = columns.map { "ADD COLUMN " + $0.definition(in: dialect) }
            switch dialect {
            case .sqlite: return additions.map { "ALTER TABLE \(table) \($0);" }.joined(separator: "\n")
            case .postgresql: return "ALTER TABLE \(table) " + additions.joined(separator: ", ") + ";"
            }
        }
    }
}
