import Logging

/// LISTENs on one channel over a dedicated connection, on a dedicated thread, and hands each notification's payload
/// to `onPayload`. Each time its LISTEN is in place (at first, and after connecting again when the connection broke)
/// it hands over `connected`: notifications sent while it was down were lost, so the caller looks for itself. The
/// listener is a hint; the callers' polls are the truth.
final class PGListener: Sendable {
    /// How long the thread waits before connecting again after a failure.
    static let retryInterval: Duration = .seconds(1)

    private let thread: PGConnectionThread

    /// Starts the thread. `onPayload` runs on it; keep it cheap.
    init(
        connectionString: String, channel: String, logger: Logger, connected: String,
        onPayload: @escaping @Sendable (String) -> Void
    ) {
        thread = PGConnectionThread(name: "store-pg-listen", interval: Self.retryInterval) { thread in
            thread.connectAgainUntilStopped(connectionString: connectionString) { connection in
                // The channel is a constant of this program, not input: quoting it as an identifier suffices.
                try connection.execute("LISTEN \"\(channel)\"")
                onPayload(connected)
                // Notifications that arrived with the LISTEN's answer are already buffered: no poll would wake.
                for payload in try connection.takeNotifications() { onPayload(payload) }
                try thread.watch(connection, closedMessage: "listen connection closed", onNotification: onPayload)
                return true
            } failed: { error in
                logger.debug("Listening for queue notifications failed; connecting again", ["error": "\(error)"])
                return true
            }
        }
    }

    /// Lets the thread end at once and close its connection.
    func stop() { thread.stop() }

    /// Stops the thread and waits until it has closed its connection.
    func stopAndWait() async { await thread.stopAndWait() }
}
