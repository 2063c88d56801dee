import CLibPQ
import Foundation
import PushStore

/// `COPY … TO STDOUT` and `COPY … FROM STDIN` on one connection, for the store move (`push-server copy-store`):
/// whole tables stream through in constant memory, in PostgreSQL's text format (one row per line).
extension PGConnection {
    /// Runs `COPY (…) TO STDOUT` and hands every data row (one line, without its `\n`) to `row`.
    ///
    /// The server sends one row per CopyData message, so each buffer is exactly one row. When `row` throws, the rest
    /// of the stream is read and dropped (the connection stays usable) and the error is rethrown.
    /// - Throws: `PostgreSQLError` from the server or libpq, or what `row` threw.
    package func copyOut(_ sql: String, row: (UnsafeRawBufferPointer) throws -> Void) throws {
        _ = try check(PQexec(conn, sql), sql: sql, accepting: PGRES_COPY_OUT)
        var failure: (any Error)?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let count = PQgetCopyData(conn, &buffer, 0)
            if count > 0, let buffer {
                defer { PQfreemem(buffer) }
                guard failure == nil else { continue }
                var length = Int(count)
                if buffer[length - 1] == 0x0A { length -= 1 }
                do {
                    try row(UnsafeRawBufferPointer(start: buffer, count: length))
                } catch {
                    failure = error
                }
            } else if count == -1 {
                break
            } else {
                throw PostgreSQLError(
                    sqlstate: nil, message: Self.trimmed(PQerrorMessage(conn)), sql: sql,
                    connectionLost: PQstatus(conn) != CONNECTION_OK)
            }
        }
        try finishCopy(sql)
        if let failure { throw failure }
    }

    /// Runs `COPY … FROM STDIN`; `produce` sends the data through `send` (any chunking: lines may span chunks).
    ///
    /// When `produce` throws, the COPY is ended with an error message, so the server rolls back this statement
    /// (and fails the surrounding transaction), and the error is rethrown.
    /// - Throws: `PostgreSQLError` (bad data is reported at the end, with the offending line), or what `produce`
    ///   threw.
    package func copyIn(_ sql: String, _ produce: (_ send: (UnsafeRawBufferPointer) throws -> Void) throws -> Void)
        throws
    {
        _ = try check(PQexec(conn, sql), sql: sql, accepting: PGRES_COPY_IN)
        let send = { (chunk: UnsafeRawBufferPointer) throws -> Void in
            guard let base = chunk.baseAddress, !chunk.isEmpty else { return }
            let sent = PQputCopyData(self.conn, base.assumingMemoryBound(to: CChar.self), Int32(chunk.count))
            guard sent == 1 else {
                throw PostgreSQLError(
                    sqlstate: nil, message: Self.trimmed(PQerrorMessage(self.conn)), sql: sql,
                    connectionLost: PQstatus(self.conn) != CONNECTION_OK)
            }
        }
        do {
            try produce(send)
        } catch {
            _ = PQputCopyEnd(conn, "push-server copy-store stopped: \(error)")
            try? finishCopy(sql)
            throw error
        }
        guard PQputCopyEnd(conn, nil) == 1 else {
            throw PostgreSQLError(
                sqlstate: nil, message: Self.trimmed(PQerrorMessage(conn)), sql: sql,
                connectionLost: PQstatus(conn) != CONNECTION_OK)
        }
        try finishCopy(sql)
    }

    /// Reads the COPY's final result (its status says whether it worked) and the NULL that ends the command.
    private func finishCopy(_ sql: String) throws {
        var failure: (any Error)?
        while let result = PQgetResult(conn) {
            do {
                _ = try check(result, sql: sql)
            } catch {
                if failure == nil { failure = error }
            }
        }
        if let failure { throw failure }
    }
}
