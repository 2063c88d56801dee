import Foundation
import Glibc
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
    /// How often the thread checks its connection, and how long it waits before connecting again.
    static let checkInterval: Duration = .seconds(1)

    private let stopped = Locked(false)
    private let done = CountdownLatch(count: 1)

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
        let lock = PGNodeLock()
        let ready = CountdownLatch(count: 1)
        lock.start(connectionString: connectionString, nodeID: nodeID, wait: wait, logger: logger, onHeld: onHeld,
                   ready: { ready.arrive($0) })
        if let error = await ready.wait().first {
            await lock.stopAndWait()
            throw error
        }
        return lock
    }

    private init() {}

    private func start(
        connectionString: String, nodeID: String, wait: Duration, logger: Logger,
        onHeld: @escaping @Sendable (PGConnection) throws -> Void, ready: @escaping @Sendable ((any Error)?) -> Void
    ) {
        let stopped = self.stopped
        let done = self.done
        let thread = Thread {
            defer { done.arrive(nil) }
            var reported = false
            var warned = false
            let deadline = ContinuousClock.now + wait
            while !stopped.withLock({ $0 }) {
                do {
                    let connection = try PGConnection(connectionString: connectionString)
                    while !(try Self.tryLock(connection, nodeID: nodeID)) {
                        if !reported && ContinuousClock.now >= deadline {
                            reported = true
                            ready(StoreUnavailableError(.busy, detail: "another live process runs as node \"\(nodeID)\" "
                                + "(engine.nodeId); two processes must never share one node identity"))
                            return
                        }
                        if reported && !warned {
                            warned = true
                            logger.error("Another process took this node's identity while its connection was down; "
                                         + "stop one of them", ["node": nodeID])
                        }
                        Self.sleep(reported ? Self.checkInterval : .milliseconds(200), unless: stopped)
                        if stopped.withLock({ $0 }) { return }
                    }
                    if !reported {
                        try onHeld(connection)
                        reported = true
                        ready(nil)
                    }
                    warned = false
                    try Self.watch(connection, stopped: stopped)
                    connection.close()
                } catch {
                    if !reported {
                        reported = true
                        ready(error)
                        return
                    }
                    // The connection broke (a database restart): connect again and take the lock again.
                    logger.warning("The node identity's connection broke; taking the identity again",
                                   ["node": nodeID, "error": "\(error)"])
                    Self.sleep(Self.checkInterval, unless: stopped)
                }
            }
        }
        thread.name = "store-pg-node"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Lets the thread end (within `checkInterval`), which closes the connection and so drops the lock.
    func stop() { stopped.withLock { $0 = true } }

    /// Stops the thread and waits until it has closed its connection.
    func stopAndWait() async {
        stop()
        _ = await done.wait()
    }

    private static func tryLock(_ connection: PGConnection, nodeID: String) throws -> Bool {
        let result = try connection.query("SELECT pg_try_advisory_lock($1::int, hashtext($2))",
                                          [.integer(Int64(lockClass)), .text(nodeID)])
        return result.bool(0, 0)
    }

    /// Returns when the connection broke (throwing) or the lock is to be dropped.
    private static func watch(_ connection: PGConnection, stopped: Locked<Bool>) throws {
        let timeout = Int32(checkInterval.components.seconds * 1000)
        while !stopped.withLock({ $0 }) {
            var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready < 0 && errno != EINTR {
                throw PostgreSQLError(sqlstate: nil, message: "poll failed: errno \(errno)", connectionLost: true)
            }
            if ready > 0 {
                _ = try connection.takeNotifications()
                if !connection.isUsable {
                    throw PostgreSQLError(sqlstate: nil, message: "node lock connection closed", connectionLost: true)
                }
            }
        }
    }

    private static func sleep(_ interval: Duration, unless stopped: Locked<Bool>) {
        var left = interval
        while left > .zero, !stopped.withLock({ $0 }) {
            let step = min(left, .milliseconds(200))
            Thread.sleep(forTimeInterval: Double(step.components.attoseconds) / 1e18 + Double(step.components.seconds))
            left -= step
        }
    }
}
