import Clocks
import Locking
import Logging
import PushStore

/// Holds a node identity for this process: a session advisory lock keyed by the identity, on a dedicated
/// connection (and thread) that lives as long as the store.
///
/// PostgreSQL drops a session's locks when its connection ends, which for a process that died (also by `kill -9`)
/// is at once: the kernel closes its socket. So a process that takes the lock knows no live process runs under
/// the same identity, and the leases the identity holds in the database belong to a dead one (`onHeld` takes them
/// over). While it runs, a second process started under the identity waits for the lock, then fails to start.
/// The two-key form `pg_try_advisory_lock(int, int)` is a lock space of its own, apart from the one-key locks the
/// migrator and the device writes take.
final class PGNodeLock: Sendable {
    /// The first key: "push-server node identity" among two-key advisory locks.
    static let lockClass: Int32 = 0x5053_4e49
    /// How long the thread waits before it asks again for a lock another process holds, and before connecting
    /// again after a failure.
    static let checkInterval: Duration = .seconds(1)

    private let thread: PGConnectionThread

    /// Starts the thread and returns once the lock is held (and `onHeld` ran on its connection), or failed.
    /// - Parameters:
    ///   - wait: how long to wait for a lock another process holds (a connection PostgreSQL has not yet seen close).
    ///   - onHeld: runs once, on the lock's connection, right after the lock was first taken.
    /// - Throws: `StoreUnavailableError(.busy)` when another live process holds the identity; what connecting or
    ///   `onHeld` threw.
    static func take(
        connectionString: String, nodeID: String, wait: Duration, logger: Logger,
        onHeld: @escaping @Sendable (PGConnection) throws -> Void
    ) async throws -> PGNodeLock {
        let ready = CountdownLatch(count: 1)
        let lock = PGNodeLock(
            thread: PGConnectionThread(name: "store-pg-node", interval: checkInterval) { thread in
                hold(
                    on: thread, connectionString: connectionString, nodeID: nodeID, wait: wait, logger: logger,
                    onHeld: onHeld, ready: { ready.arrive($0) })
            })
        if let error = await ready.wait().first {
            await lock.stopAndWait()
            throw error
        }
        return lock
    }

    private init(thread: PGConnectionThread) { self.thread = thread }

    /// The thread's body: takes the lock, reports once through `ready`, and takes it again after the connection broke.
    private static func hold(
        on thread: PGConnectionThread, connectionString: String, nodeID: String, wait: Duration, logger: Logger,
        onHeld: (PGConnection) throws -> Void, ready: ((any Error)?) -> Void
    ) {
        var reported = false
        var warned = false
        let deadline = MonotonicInstant.now + wait
        thread.connectAgainUntilStopped(connectionString: connectionString) { connection in
            while !(try tryLock(connection, nodeID: nodeID)) {
                if !reported && deadline.hasPassed {
                    reported = true
                    ready(
                        StoreUnavailableError(
                            .busy,
                            detail: "another live process runs as node \"\(nodeID)\" "
                                + "(engine.nodeId); two processes must never share one node identity"))
                    return false
                }
                if reported && !warned {
                    warned = true
                    logger.error(
                        "Another process took this node's identity while its connection was down; "
                            + "stop one of them", ["node": nodeID])
                }
                thread.sleep(reported ? checkInterval : .milliseconds(200))
                if thread.isStopped { return false }
            }
            if !reported {
                try onHeld(connection)
                reported = true
                ready(nil)
            }
            warned = false
            // Returns when the connection broke (throwing) or the lock is to be dropped.
            try thread.watch(connection, closedMessage: "node lock connection closed") { _ in }
            return true
        } failed: { error in
            if !reported {
                reported = true
                ready(error)
                return false
            }
            // The connection broke (a database restart): connect again and take the lock again.
            logger.warning(
                "The node identity's connection broke; taking the identity again",
                ["node": nodeID, "error": "\(error)"])
            return true
        }
    }

    /// Lets the thread end (within `checkInterval`), which closes the connection and so drops the lock.
    func stop() { thread.stop() }

    /// Stops the thread and waits until it has closed its connection.
    func stopAndWait() async { await thread.stopAndWait() }

    private static func tryLock(_ connection: PGConnection, nodeID: String) throws -> Bool {
        let result = try connection.query(
            "SELECT pg_try_advisory_lock($1::int, hashtext($2))",
            [.integer(Int64(lockClass)), .text(nodeID)])
        return result.bool(0, 0)
    }
}
