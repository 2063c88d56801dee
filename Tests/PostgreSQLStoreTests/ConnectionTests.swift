import Foundation
import PushStore
import XCTest

@testable import PostgreSQLStore

/// The libpq layer: errors carry PostgreSQL's SQLSTATE and message; parameters round-trip.
final class ConnectionTests: PostgreSQLTestCase {
    func testServerErrorsCarrySQLSTATEMessageAndStatement() throws {
        let connection = try PGConnection(connectionString: connectionString)
        defer { connection.close() }
        try connection.execute("CREATE TABLE t (k text PRIMARY KEY)")
        try connection.run("INSERT INTO t (k) VALUES ($1)", [.text("a")])
        XCTAssertThrowsError(try connection.run("INSERT INTO t (k) VALUES ($1)", [.text("a")])) { error in
            let failure = error as? PostgreSQLError
            XCTAssertEqual(failure?.sqlstate, "23505")
            XCTAssertTrue(failure?.isUniqueViolation ?? false)
            XCTAssertTrue(failure?.message.contains("duplicate key") ?? false, "\(String(describing: failure))")
            XCTAssertEqual(failure?.sql, "INSERT INTO t (k) VALUES ($1)")
            XCTAssertEqual(failure?.connectionLost, false)
            XCTAssertNil(StoreUnavailableError(postgreSQL: error), "a constraint is no outage")
        }
        XCTAssertThrowsError(try connection.query("SELEC 1")) { error in
            XCTAssertEqual((error as? PostgreSQLError)?.sqlstate, "42601")
        }
        XCTAssertTrue(connection.isUsable, "statement errors keep the session")
    }

    func testParametersRoundTripTextBytesArraysAndReplaceNUL() throws {
        let connection = try PGConnection(connectionString: connectionString)
        defer { connection.close() }
        let hostile = "quote\" back\\slash {brace} , comma 'single' ünïcode"
        let result = try connection.query(
            "SELECT $1::text, $2::bytea, array_to_json($3::text[])::text, array_length($4::bigint[], 1), $5::bigint",
            [
                .text(hostile), .bytes(Data([0, 1, 0xfe, 0xff])), .textArray([hostile, nil, ""]),
                .integerArray([1, nil, Int64.max]), .integer(Int64.min),
            ])
        XCTAssertEqual(result.text(0, 0), hostile)
        XCTAssertEqual(result.bytes(0, 1), Data([0, 1, 0xfe, 0xff]))
        XCTAssertEqual(result.text(0, 2), #"["quote\" back\\slash {brace} , comma 'single' ünïcode",null,""]"#)
        XCTAssertEqual(result.int64(0, 3), 3)
        XCTAssertEqual(result.int64(0, 4), Int64.min)
        let nul = try connection.query(
            "SELECT $1::text, array_to_json($2::text[])::text",
            [.text("a\u{0}b"), .textArray(["c\u{0}"])])
        XCTAssertEqual(nul.text(0, 0), "a\u{FFFD}b", "not cut off at the NUL")
        XCTAssertEqual(nul.text(0, 1), "[\"c\u{FFFD}\"]")
    }

    func testAPoolSessionSilentInsideATransactionLosesItAndItsLocksAfterTenSeconds() throws {
        // A node cut off mid-checkpoint (Tests/sdk/test_postgresql_partition.py): its transaction holds a row lock
        // and says nothing more. Another node's write on that row goes through once the server ends it.
        let setup = try PGConnection(connectionString: connectionString)
        defer { setup.close() }
        try setup.execute("CREATE TABLE held (k int PRIMARY KEY, v int); INSERT INTO held VALUES (1, 0)")
        let cutOff = try PostgreSQLPushStore.poolConnection(connectionString)
        defer { cutOff.close() }
        XCTAssertEqual(try cutOff.query("SHOW idle_in_transaction_session_timeout").text(0, 0), "10s")
        try cutOff.execute("BEGIN; UPDATE held SET v = 1 WHERE k = 1")
        let other = try PostgreSQLPushStore.poolConnection(connectionString)
        defer { other.close() }
        let start = Date()
        try other.execute("SET lock_timeout = '30s'; UPDATE held SET v = 2 WHERE k = 1")
        let waited = Date().timeIntervalSince(start)
        XCTAssertGreaterThan(waited, 8, "the lock was held while the transaction was silent")
        XCTAssertLessThan(waited, 25, "the server ended the silent transaction")
        XCTAssertEqual(
            try setup.query("SELECT v FROM held WHERE k = 1").int64(0, 0), 2, "the cut-off update rolled back")
        XCTAssertThrowsError(try cutOff.execute("COMMIT"), "the server closed the silent session")
        // The export's snapshot connection is not a pool session: a slow reader may keep it open.
        let plain = try PGConnection(connectionString: connectionString)
        defer { plain.close() }
        XCTAssertEqual(try plain.query("SHOW idle_in_transaction_session_timeout").text(0, 0), "0")
    }

    func testSSLModeComesFromTheConnectionString() throws {
        let plain = try PGConnection(connectionString: connectionString)
        XCTAssertFalse(plain.usesTLS, "sslmode=disable")
        plain.close()
        // The test cluster has no certificate: a string that requires TLS is refused, with libpq's reason.
        let required = "host=127.0.0.1 port=\(cluster.port) user=postgres dbname=\(database!) sslmode=require"
        XCTAssertThrowsError(try PGConnection(connectionString: required)) { error in
            let failure = error as? PostgreSQLError
            XCTAssertEqual(failure?.connectionLost, true)
            XCTAssertTrue(failure?.message.contains("SSL") ?? false, "\(String(describing: failure))")
            XCTAssertEqual(StoreUnavailableError(postgreSQL: error)?.reason, .unreachable)
        }
    }

    func testSerializationFailuresAreRetriedAsAWholeTransaction() throws {
        let setup = try PGConnection(connectionString: connectionString)
        defer { setup.close() }
        try setup.execute("CREATE TABLE c (id int PRIMARY KEY, n int NOT NULL); INSERT INTO c VALUES (1, 0)")
        let session = PGSession(maxAttempts: 3) { [connectionString] in
            try PGConnection(connectionString: connectionString)
        }
        var runs = 0
        try session.transaction { connection in
            runs += 1
            try connection.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            _ = try connection.query("SELECT n FROM c WHERE id = 1")
            if runs == 1 {
                // Another session changes the row under this transaction's snapshot.
                try setup.execute("UPDATE c SET n = n + 1 WHERE id = 1")
            }
            try connection.run("UPDATE c SET n = n + 10 WHERE id = 1")
        }
        XCTAssertEqual(runs, 2, "the 40001 ran the body again on a fresh snapshot")
        XCTAssertEqual(try scalar("SELECT n FROM c"), "11")
        session.drop()
    }
}
