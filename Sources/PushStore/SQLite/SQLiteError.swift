import CSQLite

/// A failed SQLite call: the result code, the extended code and SQLite's own message (`sqlite3_errmsg`).
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The primary result code (`SQLITE_CONSTRAINT`, `SQLITE_BUSY`, ...).
    public let code: Int32
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, ...).
    public let extendedCode: Int32
    /// The message SQLite reported for this failure.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    public init(code: Int32, extendedCode: Int32, message: String, sql: String?) {
        self.code = code
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// A UNIQUE, FOREIGN KEY, NOT NULL or CHECK violation.
    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }

    public var description: String {
        var text = "SQLite error \(code)/\(extendedCode): \(message)"
        if let sql { text += " [\(sql)]" }
        return text
    }
}
