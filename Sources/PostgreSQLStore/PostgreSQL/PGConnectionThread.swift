import Foundation
import Glibc
import Locking

/// A dedicated thread that keeps one libpq connection of its own (a LISTEN, a session advisory lock): it connects,
/// hands the connection to its owner, and connects again after the connection broke, until it is stopped. The pool's
/// connections are no use for this: they are busy with transactions, and what they hold ends with each one.
final class PGConnectionThread: Sendable {
    /// How long a wait on the socket lasts before the thread checks whether it must stop, and how long it waits
    /// before connecting again after a failure.
    let interval: Duration

    private let stopped = Locked(false)
    /// Arrived at when the thread has closed its connection and returns.
    private let done = CountdownLatch(count: 1)

    /// Starts the thread, which runs `body` (and ends when it returns).
    init(name: String, interval: Duration, body: @escaping @Sendable (PGConnectionThread) -> Void) {
        self.interval = interval
        let thread = Thread { [self] in
            defer { done.arrive(nil) }
            body(self)
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Whether `stop()` was called.
    var isStopped: Bool { stopped.withLock { $0 } }

    /// Lets the thread end (within `interval`) and close its connection.
    func stop() { stopped.withLock { $0 = true } }

    /// Stops the thread and waits until it has closed its connection.
    func stopAndWait() async {
        stop()
        _ = await done.wait()
    }

    /// Until stopped: connects, runs `session` on the connection and closes it. When connecting or `session`
    /// throws, hands the error to `failed` and sleeps `interval` before connecting again. Returns early when
    /// `session` or `failed` returns false.
    func connectAgainUntilStopped(
        connectionString: String, session: (PGConnection) throws -> Bool, failed: (any Error) -> Bool
    ) {
        while !isStopped {
            do {
                let connection = try PGConnection(connectionString: connectionString)
                guard try session(connection) else { return }
                connection.close()
            } catch {
                guard failed(error) else { return }
                sleep(interval)
            }
        }
    }

    /// Waits on the connection's socket until the thread is stopped (returning) or the connection broke (throwing
    /// `connectionLost`), waking every `interval` to check. Notifications that arrive go to `onNotification`;
    /// reading them is also how libpq learns that the server closed the connection.
    func watch(
        _ connection: PGConnection, closedMessage: String, onNotification: (String) -> Void
    ) throws {
        let timeout = Int32(interval.components.seconds * 1000)
        while !isStopped {
            var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready < 0 && errno != EINTR {
                throw PostgreSQLError(sqlstate: nil, message: "poll failed: errno \(errno)", connectionLost: true)
            }
            if ready > 0 {
                for payload in try connection.takeNotifications() { onNotification(payload) }
                if !connection.isUsable {
                    throw PostgreSQLError(sqlstate: nil, message: closedMessage, connectionLost: true)
                }
            }
        }
    }

    /// Sleeps `interval`, in steps short enough that a stop ends it early.
    func sleep(_ interval: Duration) {
        var left = interval
        while left > .zero, !isStopped {
            let step = min(left, .milliseconds(200))
            Thread.sleep(forTimeInterval: Double(step.components.attoseconds) / 1e18 + Double(step.components.seconds))
            left -= step
        }
    }
}
