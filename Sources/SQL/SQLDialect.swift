/// What differs between the two SQL backends in the statements the stores share: how a parameter is written, how a
/// value is cast, the names of `least`/`greatest`, text compared byte by byte, and the row-lock clauses only
/// PostgreSQL has. Everything else
/// that the stores use (`ON CONFLICT … DO NOTHING / DO UPDATE SET … = excluded.…`, `RETURNING`, `coalesce`) is
/// spelt the same on SQLite 3.35+ and PostgreSQL, and `upsert`/`returning` render it once for both.
package enum SQLDialect: String, Sendable, CaseIterable {
    /// Parameters `?` bound in order; integers, reals, text and blobs as themselves, booleans as 0/1.
    case sqlite
    /// Parameters `$1`, `$2`, … sent in text form, so each typed parameter carries a cast that fixes its type when
    /// the statement is prepared (`$1::bigint`); text is left to PostgreSQL's inference, as it fits any text column.
    case postgresql

    /// The placeholder of the 1-based parameter `index` declared as `type` (nil: an untyped NULL).
    package func placeholder(_ index: Int, type: SQLType?) -> String {
        switch self {
        case .sqlite:
            return "?"
        case .postgresql:
            guard let type, type != .text else { return "$\(index)" }
            return "$\(index)::\(postgresqlTypeName(type))"
        }
    }

    /// `expression` converted to `type`: `CAST(… AS INTEGER)` on SQLite, `(…)::bigint` on PostgreSQL.
    package func cast(_ expression: String, to type: SQLType) -> String {
        switch self {
        case .sqlite: return "CAST(\(expression) AS \(sqliteTypeName(type)))"
        case .postgresql: return "(\(expression))::\(postgresqlTypeName(type))"
        }
    }

    /// The clause that locks the rows a SELECT reads until the transaction ends. Empty on SQLite, where the one
    /// writer already holds the database for the whole transaction.
    package func clause(_ lock: SQLLock) -> String {
        switch self {
        case .sqlite: return ""
        case .postgresql: return lock.rawValue
        }
    }

    /// The name of a scalar function whose name differs (`min`/`least`, `max`/`greatest` with two or more
    /// arguments).
    package func name(_ function: SQLFunction) -> String {
        switch (self, function) {
        case (.sqlite, .least): return "min"
        case (.sqlite, .greatest): return "max"
        case (.postgresql, .least): return "least"
        case (.postgresql, .greatest): return "greatest"
        }
    }

    /// `expression` (text) compared and sorted byte by byte, whatever the database's locale: as it is on SQLite (whose
    /// default collation is BINARY), with `COLLATE "C"` on PostgreSQL. For an order a cursor must keep on both.
    package func byteOrder(_ expression: String) -> String {
        switch self {
        case .sqlite: return expression
        case .postgresql: return expression + " COLLATE \"C\""
        }
    }

    /// `ON CONFLICT (conflict…) DO NOTHING`, or `DO UPDATE SET c = excluded.c` for each of `update`.
    package func upsert(conflict: [String], update: [String] = []) -> String {
        let target = "ON CONFLICT (\(conflict.joined(separator: ", ")))"
        guard !update.isEmpty else { return target + " DO NOTHING" }
        return target + " DO UPDATE SET " + update.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
    }

    /// `RETURNING columns…` (SQLite has it since 3.35).
    package func returning(_ columns: [String]) -> String {
        "RETURNING " + columns.joined(separator: ", ")
    }

    /// `value` as an SQL literal, for the trusted constants of a schema step (a column's default). A value a statement
    /// runs with is bound instead (`SQLQuery`), never spliced.
    package func literal(_ value: SQLValue) -> String {
        switch (value, self) {
        case (.null, _): return "NULL"
        case (.integer(let number), _): return String(number)
        case (.real(let number), _): return String(number)
        case (.text(let text), _): return "'" + String(text.flatMap { $0 == "'" ? ["'", "'"] : [$0] }) + "'"
        case (.blob(let bytes), .sqlite): return "X'" + hex(bytes) + "'"
        case (.blob(let bytes), .postgresql): return "'\\x" + hex(bytes) + "'"
        case (.bool(let flag), .sqlite): return flag ? "1" : "0"
        case (.bool(let flag), .postgresql): return flag ? "true" : "false"
        }
    }

    private func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] })
    }

    private func postgresqlTypeName(_ type: SQLType) -> String {
        switch type {
        case .integer: return "bigint"
        case .real: return "double precision"
        case .text: return "text"
        case .blob: return "bytea"
        case .bool: return "boolean"
        }
    }

    private func sqliteTypeName(_ type: SQLType) -> String {
        switch type {
        case .integer, .bool: return "INTEGER"
        case .real: return "REAL"
        case .text: return "TEXT"
        case .blob: return "BLOB"
        }
    }
}

/// A row lock taken by a SELECT inside a write transaction (PostgreSQL only; see `SQLDialect.clause(_:)`).
package enum SQLLock: String, Sendable, CaseIterable {
    /// Concurrent writers of the same rows wait for this transaction.
    case forUpdate = "FOR UPDATE"
    /// Rows another transaction holds are passed over: the claim of queued work by several nodes.
    case forUpdateSkipLocked = "FOR UPDATE SKIP LOCKED"
    /// A row another transaction holds fails the statement at once (SQLSTATE 55P03) instead of waiting: a lock
    /// that would be taken out of order (`PGConnection.followsOtherWrites`).
    case forUpdateNoWait = "FOR UPDATE NOWAIT"
}

/// A scalar function spelt differently by the two dialects.
package enum SQLFunction: Sendable, CaseIterable {
    /// The smallest argument.
    case least
    /// The largest argument.
    case greatest
}
