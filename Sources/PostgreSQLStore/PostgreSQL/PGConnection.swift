import CLibPQ
import Foundation
import PushStore

/// One libpq connection; the only owner of its `PGconn*` and of the statements prepared on it.
///
/// libpq forbids two threads using one `PGconn` at once, so the store gives each connection to exactly one thread
/// for its whole life (`ConnectionPool`). Statements are prepared on first use under generated names; names are
/// per session, so a reconnect (a new `PGConnection`) prepares them again. `package`: the store move
/// (`StoreCopy`) reads and writes whole tables through the same owner.
package final class PGConnection {
    private var handle: OpaquePointer?
    /// SQL text → prepared statement name.
    private var prepared: [String: String] = [:]
    /// Whether the open transaction is a group transaction in which other writes ran before the current one
    /// (`PGSession.group`): the row locks they took are held, so a lock that other transactions take before such
    /// rows is asked for `NOWAIT` (`PostgreSQLPushStore.lockedCounts`) rather than waited for in the wrong order.
    package var followsOtherWrites = false

    /// TCP keepalive of both ends of a connection: the first probe after `idle` seconds of silence, then one every
    /// `interval` seconds, the peer given up after `count` unanswered (about 25 s). The client sets it here
    /// (`defaults`); the pool asks the server for the same (`PostgreSQLPushStore.poolSessionSettings`).
    package enum Keepalive {
        package static let idle = 10
        package static let interval = 5
        package static let count = 3
    }

    /// Settings that apply unless the connection string sets them: fail fast when the server is unreachable, and
    /// notice a dead peer in about 25 s (`Keepalive`; `tcp_user_timeout` for data sent but never acknowledged)
    /// instead of the kernel's two hours: a node must not keep working on a lease it can no longer renew.
    static let defaults: [(String, String)] = [
        ("connect_timeout", "5"), ("keepalives", "1"), ("keepalives_idle", String(Keepalive.idle)),
        ("keepalives_interval", String(Keepalive.interval)), ("keepalives_count", String(Keepalive.count)),
        ("tcp_user_timeout", "20000"), ("application_name", "push-server"),
    ]

    /// Connects with `connectionString` (`key=value …` or a `postgresql://` URI; `sslmode` and every other libpq
    /// setting come from it), on top of `defaults`.
    /// - Throws: `PostgreSQLError` with libpq's message (`connectionLost` set) when the connection fails.
    package init(connectionString: String) throws {
        // expand_dbname = 1: the `dbname` entry holds the whole connection string; entries after it would override
        // it, so it goes last and the string wins over the defaults.
        let pairs = Self.defaults + [("dbname", connectionString)]
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            for pointer in keywords + values { free(pointer) }
        }
        var keywordPointers: [UnsafePointer<CChar>?] = keywords.map { UnsafePointer($0) } + [nil]
        var valuePointers: [UnsafePointer<CChar>?] = values.map { UnsafePointer($0) } + [nil]
        let connection = keywordPointers.withUnsafeMutableBufferPointer { keywords in
            valuePointers.withUnsafeMutableBufferPointer { values in
                PQconnectdbParams(keywords.baseAddress, values.baseAddress, 1)
            }
        }
        guard let connection else {
            throw PostgreSQLError(sqlstate: nil, message: "libpq could not allocate a connection", connectionLost: true)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgreSQLError(sqlstate: nil, message: message, connectionLost: true)
        }
        handle = connection
    }

    deinit { close() }

    /// Closes the connection. Idempotent.
    package func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared.removeAll()
    }

    /// Whether the connection can still be used (`CONNECTION_OK`).
    var isUsable: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Whether a transaction is open on the connection, a failed one included (`PQTRANS_INERROR`: it waits for a
    /// rollback to a savepoint or a ROLLBACK).
    var inTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// The server's process id for this session (what `pg_terminate_backend` takes).
    var backendPID: Int32 {
        guard let handle else { return 0 }
        return PQbackendPID(handle)
    }

    /// Whether the session is encrypted (`sslmode`).
    var usesTLS: Bool {
        guard let handle else { return false }
        return PQsslInUse(handle) == 1
    }

    /// The connection's socket, to wait on for notifications; -1 when closed.
    var socket: Int32 {
        guard let handle else { return -1 }
        return PQsocket(handle)
    }

    /// Reads what the server sent and returns the payloads of the LISTEN notifications received.
    /// - Throws: `PostgreSQLError` (`connectionLost`) when the connection broke.
    func takeNotifications() throws -> [String] {
        guard PQconsumeInput(conn) == 1 else {
            throw PostgreSQLError(sqlstate: nil, message: Self.trimmed(PQerrorMessage(conn)), connectionLost: true)
        }
        var payloads: [String] = []
        while let notice = PQnotifies(conn) {
            payloads.append(notice.pointee.extra.map { String(cString: $0) } ?? "")
            PQfreemem(notice)
        }
        return payloads
    }

    var conn: OpaquePointer {
        guard let handle else { preconditionFailure("PostgreSQL connection used after close") }
        return handle
    }

    /// Runs SQL without parameters through the simple protocol (transaction control, migrations: may hold several
    /// statements).
    package func execute(_ sql: String) throws {
        _ = try check(PQexec(conn, sql), sql: sql)
    }

    /// Runs a prepared statement (prepared on first use) with `parameters` (`$1`, `$2`, …).
    @discardableResult
    package func query(_ sql: String, _ parameters: [PGValue] = []) throws -> PGResult {
        let name = try statementName(sql, parameterCount: parameters.count)
        let encoded = parameters.map { $0.encoded() }
        let copies = encoded.map { $0.map { strdup($0) } ?? nil }
        defer { for pointer in copies { free(pointer) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
        let result = pointers.withUnsafeBufferPointer { values in
            PQexecPrepared(conn, name, Int32(parameters.count), values.baseAddress, nil, nil, 0)
        }
        return try check(result, sql: sql)
    }

    /// Rows changed by a statement.
    @discardableResult
    package func run(_ sql: String, _ parameters: [PGValue] = []) throws -> Int {
        try query(sql, parameters).affectedRows
    }

    private func statementName(_ sql: String, parameterCount: Int) throws -> String {
        if let name = prepared[sql] { return name }
        let name = "s\(prepared.count + 1)"
        _ = try check(PQprepare(conn, name, sql, 0, nil), sql: sql)
        prepared[sql] = name
        return name
    }

    /// The one place where libpq results become errors: `PGRES_COMMAND_OK` and `PGRES_TUPLES_OK` pass (and
    /// `accepting`, the COPY states); anything else throws `PostgreSQLError` with the SQLSTATE, PostgreSQL's message
    /// and detail, the SQL, and whether the connection broke.
    func check(_ result: OpaquePointer?, sql: String, accepting: ExecStatusType? = nil) throws -> PGResult {
        guard let result else {
            // No result at all: out of memory or the connection is gone.
            throw PostgreSQLError(
                sqlstate: nil, message: Self.trimmed(PQerrorMessage(conn)), sql: sql,
                connectionLost: PQstatus(conn) != CONNECTION_OK)
        }
        let owned = PGResult(result)
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return owned
        case let status where status == accepting:
            return owned
        default:
            let field = { (code: Int32) -> String? in PQresultErrorField(result, code).map { String(cString: $0) } }
            let message = field(clibpq_diag_message_primary()) ?? Self.trimmed(PQresultErrorMessage(result))
            throw PostgreSQLError(
                sqlstate: field(clibpq_diag_sqlstate()), message: message, detail: field(clibpq_diag_message_detail()),
                sql: sql, connectionLost: PQstatus(conn) != CONNECTION_OK)
        }
    }

    static func trimmed(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown libpq error" }
        return String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

@available(*, unavailable, message: "A libpq connection belongs to one thread")
extension PGConnection: Sendable {}

extension PostgreSQLPushStore {
    /// Whether libpq can parse `connectionString` (key=value pairs or a URI), checked without connecting.
    package static func isValidConnectionString(_ connectionString: String) -> Bool {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &error) else {
            if let error { PQfreemem(error) }
            return false
        }
        PQconninfoFree(options)
        return true
    }
}
