/// A long-running part of the server (the HTTP listener, the publish engine, the webhook outbox, the retention
/// janitor, the store watchdog), all with one lifetime: `run()` works until the task running it is cancelled, then
/// drains what it holds and returns.
///
/// Cancellation is the only stop signal, so there is one way to stop anything. How long a drain may take is the
/// service's own setting (a grace period it was configured with), not an argument: a `ServiceGroup` cancels its
/// services in order and awaits each one's return.
package protocol Service: Sendable {
    /// A short name for logs ("http", "engine", …).
    var name: String { get }

    /// Works until the calling task is cancelled; then stops taking new work, finishes or hands back what it
    /// holds, and returns. - Throws: only when the service cannot start or cannot go on (the group stops then).
    func run() async throws
}
