import PushStore

/// A failed libpq call: PostgreSQL's SQLSTATE (when the server sent one), its message and the statement.
package struct PostgreSQLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The five-character SQLSTATE (`23505`, `40001`, `57P01`, …); nil when the failure happened on the client
    /// side (no connection, a broken socket).
    package let sqlstate: String?
    /// The primary message (libpq's own message when there is no SQLSTATE).
    package let message: String
    /// The server's detail line, if any.
    package let detail: String?
    /// The statement that failed, when there was one.
    package let sql: String?
    /// Whether the connection was unusable afterwards (`CONNECTION_BAD`): it must be dropped and opened again.
    package let connectionLost: Bool

    package init(
        sqlstate: String?, message: String, detail: String? = nil, sql: String? = nil, connectionLost: Bool = false
    ) {
        self.sqlstate = sqlstate
        self.message = message
        self.detail = detail
        self.sql = sql
        self.connectionLost = connectionLost
    }

    /// A serialization failure or a deadlock: the whole transaction may simply run again.
    package var isTransientConflict: Bool { sqlstate == "40001" || sqlstate == "40P01" }

    /// The server is gone, shutting down, starting, or out of connections, or the socket broke: "not now".
    package var isUnavailability: Bool {
        if connectionLost { return true }
        guard let sqlstate else { return false }
        // 08: connection exception; 57P01-57P03: admin/crash shutdown, cannot connect now; 53300: too many
        // connections; 53100: disk full; 25006: read-only transaction (a standby after a failover).
        return sqlstate.hasPrefix("08") || ["57P01", "57P02", "57P03", "53300", "53100", "25006"].contains(sqlstate)
    }

    /// A unique-constraint violation.
    package var isUniqueViolation: Bool { sqlstate == "23505" }
    /// A foreign-key violation (a row referenced a parent another transaction deleted meanwhile).
    package var isForeignKeyViolation: Bool { sqlstate == "23503" }
    /// A lock asked for with `NOWAIT` was held by another transaction (`PostgreSQLPushStore.lockedCounts`).
    package var isLockNotAvailable: Bool { sqlstate == "55P03" }

    package var description: String {
        var text = "PostgreSQL error \(sqlstate ?? "(no SQLSTATE)"): \(message)"
        if let detail { text += " (\(detail))" }
        if let sql { text += " [\(sql)]" }
        return text
    }
}

extension StoreUnavailableError {
    /// The unavailability `error` stands for (a lost connection, a server that is shutting down, full or
    /// read-only), or nil when it is any other failure (a constraint, a bug).
    init?(postgreSQL error: any Error) {
        if let error = error as? StoreUnavailableError {
            self = error
            return
        }
        guard let error = error as? PostgreSQLError, error.isUnavailability else { return nil }
        let reason: Reason
        switch error.sqlstate {
        case "53100": reason = .diskFull
        case "25006": reason = .readOnly
        case "53300": reason = .busy
        default: reason = .unreachable
        }
        self.init(reason, detail: error.message)
    }
}
