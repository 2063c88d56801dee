/// An index a schema step creates, written once and rendered for each dialect by `SchemaChange`.
package struct SchemaIndex: Sendable, Equatable {
    /// The index's name.
    package var name: String
    /// The table it indexes.
    package var table: String
    /// The indexed columns (or expressions), in order.
    package var columns: [String]
    /// `CREATE UNIQUE INDEX`.
    package var unique: Bool
    /// A partial index's condition (only the rows it holds are indexed).
    package var condition: SchemaCondition?

    package init(
        _ name: String, on table: String, _ columns: [String], unique: Bool = false,
        where condition: SchemaCondition? = nil
    ) {
        self.name = name
        self.table = table
        self.columns = columns
        self.unique = unique
        self.condition = condition
    }

    /// `CREATE [UNIQUE] INDEX name ON table (columns) [WHERE …];` in `dialect`.
    package func createStatement(in dialect: SQLDialect) -> String {
        let head = "CREATE " + (unique ? "UNIQUE INDEX " : "INDEX ")
        let filter = condition.map { " WHERE " + $0.rendered(in: dialect) } ?? ""
        return head + "\(name) ON \(table) (\(columns.joined(separator: ", ")))\(filter);"
    }
}

/// A partial index's condition: SQL text that is the same on both backends, or a test of a boolean column, which
/// SQLite keeps as an integer.
package enum SchemaCondition: Sendable, Equatable, ExpressibleByStringLiteral {
    /// Written the same on both backends (`finished_at IS NOT NULL`, `state = 'pending'`).
    case sql(String)
    /// The boolean column is false: `column = 0` on SQLite, `NOT column` on PostgreSQL.
    case isFalse(String)
    /// The boolean column is true: `column = 1` on SQLite, `column` on PostgreSQL.
    case isTrue(String)

    package init(stringLiteral value: String) { self = .sql(value) }

    /// The condition in `dialect`.
    package func rendered(in dialect: SQLDialect) -> String {
        switch (self, dialect) {
        case (.sql(let text), _): return text
        case (.isFalse(let column), .sqlite): return column + " = 0"
        case (.isFalse(let column), .postgresql): return "NOT " + column
        case (.isTrue(let column), .sqlite): return column + " = 1"
        case (.isTrue(let column), .postgresql): return column
        }
    }
}
