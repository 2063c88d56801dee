/// A table a schema step creates, written once and rendered for each dialect by `SchemaChange`.
///
/// Columns keep their order; constraints over several columns follow them, in the order `primaryKey`, `unique`,
/// `checks`, as the step lists write them.
package struct SchemaTable: Sendable, Equatable {
    /// The table's name.
    package var name: String
    /// The columns, in order.
    package var columns: [SchemaColumn]
    /// A primary key over several columns (`PRIMARY KEY (a, b)`); empty when a column is the key or there is none.
    package var primaryKey: [String]
    /// Each `UNIQUE (a, b)` over several columns.
    package var unique: [[String]]
    /// Each table-level `CHECK (…)`, its condition as it is written on both backends.
    package var checks: [String]
    /// SQLite's `WITHOUT ROWID` (a table clustered on its primary key); PostgreSQL has no such table and ignores it.
    package var withoutRowID: Bool

    package init(
        _ name: String, columns: [SchemaColumn], primaryKey: [String] = [], unique: [[String]] = [],
        checks: [String] = [], withoutRowID: Bool = false
    ) {
        self.name = name
        self.columns = columns
        self.primaryKey = primaryKey
        self.unique = unique
        self.checks = checks
        self.withoutRowID = withoutRowID
    }

    /// `CREATE TABLE name (…);` in `dialect`, one column or constraint per line indented by four spaces.
    package func createStatement(in dialect: SQLDialect) -> String {
        var lines = columns.map { $0.definition(in: dialect) }
        if !primaryKey.isEmpty { lines.append("PRIMARY KEY (\(primaryKey.joined(separator: ", ")))") }
        lines += unique.map { "UNIQUE (\($0.joined(separator: ", ")))" }
        lines += checks.map { "CHECK (\($0))" }
        // 16 bytes, so the literal is stored as text: a shorter one is inlined as instruction immediates, where
        // lintian's spelling check (Tests/deb) read " WITHOUT" and the next opcode byte as one word.
        let close = withoutRowID && dialect == .sqlite ? ") WITHOUT ROWID;" : ");"
        return "CREATE TABLE \(name) (\n" + lines.map { "    " + $0 }.joined(separator: ",\n") + "\n" + close
    }
}

/// One column of a `SchemaTable`, or one an `ALTER TABLE … ADD COLUMN` adds.
package struct SchemaColumn: Sendable, Equatable {
    /// The column's name.
    package var name: String
    /// What it holds, which names its type in each dialect.
    package var type: SchemaColumnType
    /// Whether it takes NULL (`NOT NULL` when not). An identity column is never NULL and writes no `NOT NULL`.
    package var nullable: Bool
    /// `PRIMARY KEY` on this one column.
    package var primaryKey: Bool
    /// `UNIQUE` on this one column.
    package var unique: Bool
    /// The value an insert without it stores, spelt per dialect (`.bool(false)` is `0` on SQLite, `false` on
    /// PostgreSQL).
    package var defaultValue: SQLValue?
    /// `CHECK (…)` on this column, its condition as it is written on both backends.
    package var check: String?
    /// `REFERENCES …` with what follows it (`devices (id) ON DELETE CASCADE`).
    package var references: String?
    /// Compared and sorted byte by byte whatever the database's locale (`COLLATE "C"` on PostgreSQL; SQLite's
    /// default), for a text column an index pages through in the order `SQLDialect.byteOrder` reads it.
    package var byteOrder: Bool

    package init(
        _ name: String, _ type: SchemaColumnType, nullable: Bool = false, primaryKey: Bool = false,
        unique: Bool = false, default defaultValue: SQLValue? = nil, check: String? = nil, references: String? = nil,
        byteOrder: Bool = false
    ) {
        self.name = name
        self.type = type
        self.nullable = nullable
        self.primaryKey = primaryKey
        self.unique = unique
        self.defaultValue = defaultValue
        self.check = check
        self.references = references
        self.byteOrder = byteOrder
    }

    /// `name TYPE [NOT NULL] [PRIMARY KEY] [UNIQUE] [DEFAULT v] [CHECK (…)] [REFERENCES …]` in `dialect`.
    package func definition(in dialect: SQLDialect) -> String {
        var parts = [name, type.name(in: dialect)]
        if byteOrder && dialect == .postgresql { parts.append("COLLATE \"C\"") }
        if !nullable && !type.isIdentity && !primaryKey { parts.append("NOT NULL") }
        if primaryKey { parts.append("PRIMARY KEY") }
        if unique { parts.append("UNIQUE") }
        if let defaultValue { parts.append("DEFAULT " + dialect.literal(defaultValue)) }
        if let check { parts.append("CHECK (\(check))") }
        if let references { parts.append("REFERENCES " + references) }
        return parts.joined(separator: " ")
    }
}

/// What a column holds. The two dialects name the same kind differently, and an id the database assigns is a
/// different construct on each.
package enum SchemaColumnType: Sendable, Equatable {
    /// A 64-bit integer (times in milliseconds, ids of other rows): `INTEGER`, `bigint`.
    case integer
    /// A small count or code that fits 32 bits (attempts, an HTTP status): `INTEGER`, `integer`.
    case int32
    /// A double: `REAL`, `double precision`.
    case real
    /// Text: `TEXT`, `text`.
    case text
    /// Bytes: `BLOB`, `bytea`.
    case blob
    /// A boolean: `INTEGER` holding 0 or 1 on SQLite, `boolean`.
    case bool
    /// The row's id, assigned by the database and the primary key: SQLite's rowid (`INTEGER PRIMARY KEY`, which
    /// may hand out the newest id again once its row is deleted) or a PostgreSQL identity column.
    case identity
    /// As `identity`, but an id is never handed out twice, even after a purge (a cursor a client keeps must not skip
    /// a later row): `INTEGER PRIMARY KEY AUTOINCREMENT` on SQLite; a PostgreSQL identity never goes back anyway.
    case identityNeverReused

    /// Whether the database assigns it and it is the primary key.
    var isIdentity: Bool { self == .identity || self == .identityNeverReused }

    /// The type (and for an identity the key clause) in `dialect`.
    package func name(in dialect: SQLDialect) -> String {
        switch (self, dialect) {
        case (.integer, .sqlite), (.int32, .sqlite), (.bool, .sqlite): return "INTEGER"
        case (.real, .sqlite): return "REAL"
        case (.text, .sqlite): return "TEXT"
        case (.blob, .sqlite): return "BLOB"
        case (.identity, .sqlite): return "INTEGER PRIMARY KEY"
        case (.identityNeverReused, .sqlite): return "INTEGER PRIMARY KEY AUTOINCREMENT"
        case (.integer, .postgresql): return "bigint"
        case (.int32, .postgresql): return "integer"
        case (.real, .postgresql): return "double precision"
        case (.text, .postgresql): return "text"
        case (.blob, .postgresql): return "bytea"
        case (.bool, .postgresql): return "boolean"
        case (.identity, .postgresql), (.identityNeverReused, .postgresql):
            return "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
        }
    }
}
