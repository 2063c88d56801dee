import Foundation
import Glibc
import Locking
import Logging
import PushStore

/// LISTENs on one channel over a dedicated connection, on a dedicated thread, and hands each notification's payload
/// to `onPayload`. Each time its LISTEN is in place (at first, and after connecting again when the connection broke)
/// it hands over `connected`: notifications sent while it was down were lost, so the caller looks for itself. The
/// listener is a hint; the callers' polls are the truth.
final class PGListener: Sendable {
    /// How long a wait on the socket lasts before the thread checks whether it must stop, and how long it waits
    /// before connecting again after a failure.
    static let retryInterval: Duration = .seconds(1)

    private let stopped = Locked(false)
    /// Arrived at when the thread has closed its connection and returns.
    private let done = CountdownLatch(count: 1)

    /// Starts the thread. `onPayload` runs on it; keep it cheap.
    init(connectionString: String, channel: String, logger: Logger, connected: String,
         onPayload: @escaping @Sendable (String) -> Void) {
        let stopped = self.stopped
        let done = self.done
        let thread = Thread {
            defer { done.arrive(nil) }
            while !stopped.withLock({ $0 }) {
                do {
                    let connection = try PGConnection(connectionString: connectionString)
                    // The channel is a constant of this program, not input: quoting it as an identifier suffices.
                    try connection.execute("LISTEN \"\(channel)\"")
                    onPayload(connected)
                    // Notifications that arrived with the LISTEN's answer are already buffered: no poll would wake.
                    for payload in try connection.takeNotifications() { onPayload(payload) }
                    try Self.wait(connection, stopped: stopped, onPayload: onPayload)
                    connection.close()
                } catch {
                    logger.debug("Listening for queue notifications failed; connecting again",
                                 ["error": "\(error)"])
                    Self.sleep(Self.retryInterval, unless: stopped)
                }
            }
        }
        thread.name = "store-pg-listen"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Lets the thread end (within `retryInterval`) and close its connection.
    func stop() { stopped.withLock { $0 = true } }

    /// Stops the thread and waits until it has closed its connection.
    func stopAndWait() async {
        stop()
        _ = await done.wait()
    }

    private static func wait(
        _ connection: PGConnection, stopped: Locked<Bool>, onPayload: @Sendable (String) -> Void
    ) throws {
        let timeout = Int32(retryInterval.components.seconds * 1000)
        while !stopped.withLock({ $0 }) {
            var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready < 0 && errno != EINTR {
                throw PostgreSQLError(sqlstate: nil, message: "poll failed: errno \(errno)", connectionLost: true)
            }
            if ready > 0 {
                for payload in try connection.takeNotifications() { onPayload(payload) }
                if !connection.isUsable {
                    throw PostgreSQLError(sqlstate: nil, message: "listen connection closed", connectionLost: true)
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
