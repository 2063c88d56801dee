import Foundation
import PushStore
import SQL

/// A connection thread's hold on the database: the current connection (opened on first use, dropped when it
/// breaks, opened again on the next use) and the transaction runner with its retry rules.
///
/// Belongs to one pool thread, like the connection it holds.
final class PGSession {
    private let connect: @Sendable () throws -> PGConnection
    private var connection: PGConnection?
    /// How often a transaction runs at most (the first run plus retries).
    let maxAttempts: Int

    init(maxAttempts: Int, connect: @escaping @Sendable () throws -> PGConnection) {
        self.maxAttempts = max(1, maxAttempts)
        self.connect = connect
    }

    /// The open connection, or a new one when there is none or the last one broke.
    /// - Throws: `PostgreSQLError` (`connectionLost`) when the server cannot be reached.
    func connected() throws -> PGConnection {
        if let connection, connection.isUsable { return connection }
        drop()
        let fresh = try connect()
        connection = fresh
        return fresh
    }

    /// Closes the connection (the next use opens a new one).
    func drop() {
        connection?.close()
        connection = nil
    }

    /// Runs `body` in one transaction and commits it. A read-only one is `REPEATABLE READ`: every statement of it
    /// sees one snapshot, as `SQLStoreBackend.read` promises. (PostgreSQL's default, `READ COMMITTED`, gives each
    /// statement a snapshot of its own: a publish's status read its counters, then its state, and between the two a
    /// run's last checkpoint and its finish could commit, so a one-device publish showed `finished` with no counts.)
    ///
    /// Runs it again, on a fresh snapshot, after a serialization failure or deadlock (40001, 40P01), after an
    /// error `retryable` accepts, and after a lost connection as long as COMMIT had not been sent (nothing of it can
    /// have been stored then), on a new connection; waits a few jittered milliseconds between runs. A connection lost during COMMIT
    /// leaves the outcome unknown: that error is thrown as is, never replayed.
    func transaction<T>(
        readOnly: Bool = false, retryable: (PostgreSQLError) -> Bool = { _ in false },
        _ body: (PGConnection) throws -> T
    ) throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            var committing = false
            // A failed connect is not tried again here: with an unreachable host each try costs `connect_timeout`,
            // and the caller (an SDK's retry, the store watchdog's probe) comes back anyway.
            let connection = try connected()
            do {
                connection.followsOtherWrites = false
                try connection.execute(readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN")
                let value = try body(connection)
                committing = true
                try connection.execute("COMMIT")
                return value
            } catch {
                if connection.isUsable {
                    _ = try? connection.execute("ROLLBACK")
                } else {
                    drop()
                }
                guard let failure = error as? PostgreSQLError, attempt < maxAttempts else { throw error }
                let replay =
                    failure.isTransientConflict || retryable(failure) || (failure.connectionLost && !committing)
                guard replay else { throw error }
                backoff(attempt)
            }
        }
    }

    /// Runs `writes` in one transaction, each in a savepoint of its own, and commits once (`GroupCommit`, the loop
    /// SQLite's writer runs too): a write that fails is rolled back to its savepoint without undoing the others. A
    /// write that met a serialization failure, a deadlock, a busy `NOWAIT` lock (`PGConnection.followsOtherWrites`)
    /// or an error its `retryable` accepts runs again afterwards in a transaction of its own (with the retries of
    /// `transaction`). A connection lost before COMMIT replays the whole group on a new connection, as does a
    /// serialization failure or deadlock of the group transaction itself; any other failure of it fails every write
    /// of it. Completions run after COMMIT.
    func group(_ writes: [PGGroupedWrite]) {
        var attempt = 0
        while true {
            attempt += 1
            let result: GroupCommitResult<PGGroupedWrite>
            do {
                let open = try connected()
                result = GroupCommit().run(
                    writes, in: PGGroupTransaction(connection: open, session: self),
                    write: { write, followsKeptWrites in
                        // The locks of a write rolled back to its savepoint are released; those of the ones kept
                        // are not.
                        open.followsOtherWrites = followsKeptWrites
                        return try write.run(open)
                    },
                    classify: Self.classify)
            } catch {
                // No connection: nothing was begun.
                drop()
                result = .failed(writes: writes, error: error, commitSent: false)
            }
            switch result {
            case .failed(_, let error, let commitSent):
                if let failure = error as? PostgreSQLError, attempt < maxAttempts,
                    (failure.connectionLost && !commitSent) || failure.isTransientConflict
                {
                    backoff(attempt)
                    continue
                }
                for write in writes { write.fail(error) }
            case .committed(_, let completions, let failed, let again):
                for completion in completions { completion() }
                for (write, error) in failed { write.fail(error) }
                for write in again { single(write) }
            }
            return
        }
    }

    /// What a write's error means in a group transaction: a lost connection takes the transaction with it; a
    /// conflict with another transaction (or an error the write says is one) may not recur in a fresh transaction;
    /// anything else is the write's own failure.
    private static func classify(_ error: any Error, _ write: PGGroupedWrite) -> GroupWriteFailure {
        guard let failure = error as? PostgreSQLError else { return .failAfterCommit }
        if failure.connectionLost { return .abortBatch }
        if failure.isTransientConflict || failure.isLockNotAvailable || write.retryable(failure) {
            return .runAgainAlone
        }
        return .failAfterCommit
    }

    /// One write in a transaction of its own, with `transaction`'s retries.
    private func single(_ write: PGGroupedWrite) {
        do {
            let completion = try transaction(retryable: write.retryable) { try write.run($0) }
            completion()
        } catch {
            write.fail(error)
        }
    }

    /// A jittered pause before a retry (a real deadline: the conflicting transaction or the restarting server
    /// needs a moment), growing with the attempt, at most about 100 ms.
    private func backoff(_ attempt: Int) {
        let millis = min(100, 5 * attempt * attempt) + Int.random(in: 0...5)
        Thread.sleep(forTimeInterval: Double(millis) / 1000)
    }
}

@available(*, unavailable, message: "A session belongs to its pool thread")
extension PGSession: Sendable {}
