/// Exit statuses shared by every command (documented in `push-server --help`).
package enum ExitCode: Int32, Sendable {
    /// Success.
    case ok = 0
    /// A runtime failure: the store could not open, APNs refused, the port is taken.
    case failure = 1
    /// A usage or configuration error: nothing was attempted.
    case usage = 2
}
