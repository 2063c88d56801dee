import Foundation
import Glibc
import Locking

/// A dedicated thread that keeps one libpq connection of its own (a LISTEN, a session advisory lock): it connects,
/// hands the connection to its owner, and connects again after the connection broke, until it is stopped. The pool's
/// connections are no use for this: they are busy with transactions, and what they hold ends with each one.
final class PGConnectionThread: Sendable {
    /// How long the thread waits before connecting again after a failure. (A stop wakes it at once, also from a
    /// wait on its socket: `wakeup`.)
    let interval: Duration

    private let stopped = Locked(false)
    /// Signalled by `stop()`; the thread's waits (on its socket, between connection attempts) end on it.
    private let wakeup = ThreadWakeup()
    /// Arrived at when the thread has closed its connection and returns.
    private let done = CountdownLatch(count: 1)

    /// Starts the thread, which runs `body` (and ends when it returns).
    init(name: String, interval: Duration, body: @escaping @Sendable (PGConnectionThread) -> Void) {
        self.interval = interval
        NamedThread.start(name, stackSize: 1 << 20) { [self] in
            defer { done.arrive(nil) }
            body(self)
        }
    }

    /// Whether `stop()` was called.
    var isStopped: Bool { stopped.withLock { $0 } }

    /// Lets the thread end and close its connection (at once: its waits end on `wakeup`).
    func stop() {
        stopped.withLock { $0 = true }
        wakeup.signal()
    }

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
    /// `connectionLost`). Notifications that arrive go to `onNotification`; reading them is also how libpq learns
    /// that the server closed the connection (its socket turns readable at end of file), so nothing needs a timer.
    func watch(
        _ connection: PGConnection, closedMessage: String, onNotification: (String) -> Void
    ) throws {
        while !isStopped {
            switch wakeup.wait(orReadable: connection.socket) {
            case .signalled:
                return
            case .failed(let code):
                throw PostgreSQLError(sqlstate: nil, message: "poll failed: errno \(code)", connectionLost: true)
            case .readable:
                for payload in try connection.takeNotifications() { onNotification(payload) }
                if !connection.isUsable {
                    throw PostgreSQLError(sqlstate: nil, message: closedMessage, connectionLost: true)
                }
            case .timedOut:
                break
            }
        }
    }

    /// Sleeps `interval`, or less when the thread is stopped meanwhile.
    func sleep(_ interval: Duration) {
        _ = wakeup.wait(timeout: interval)
    }
}
