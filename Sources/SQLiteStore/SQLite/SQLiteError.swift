import CSQLite
import PushStore

/// A failed SQLite call: the result code, the extended code and SQLite's own message (`sqlite3_errmsg`).
package struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The primary result code (`SQLITE_CONSTRAINT`, `SQLITE_BUSY`, ...).
    package let code: Int32
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, ...).
    package let extendedCode: Int32
    /// The message SQLite reported for this failure.
    package let message: String
    /// The statement that failed, when there was one.
    package let sql: String?

    package init(code: Int32, extendedCode: Int32, message: String, sql: String?) {
        self.code = code
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// A UNIQUE, FOREIGN KEY, NOT NULL or CHECK violation.
    package var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }

    package var description: String {
        var text = "SQLite error \(code)/\(extendedCode): \(message)"
        if let sql { text += " [\(sql)]" }
        return text
    }
}

extension StoreUnavailableError {
    /// The unavailability `error` stands for (an `SQLiteError` with a code that means "not now", or a
    /// `StoreUnavailableError` already), or nil when it is any other failure (a constraint, a bug).
    init?(sqlite error: any Error) {
        if let error = error as? StoreUnavailableError {
            self = error
            return
        }
        guard let error = error as? SQLiteError else { return nil }
        let reason: Reason
        switch error.code {
        case SQLITE_FULL: reason = .diskFull
        case SQLITE_IOERR: reason = .ioError
        case SQLITE_READONLY: reason = .readOnly
        case SQLITE_BUSY, SQLITE_LOCKED: reason = .busy
        case SQLITE_CANTOPEN: reason = .cannotOpen
        default: return nil
        }
        self.init(reason, detail: error.message)
    }
}
