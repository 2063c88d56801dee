import Dispatch

/// A callback `MonotonicTimer.schedule` will run: `cancel()` keeps it from starting (one already running runs to
/// its end, so its body must still find out whether there is something to do).
package struct ScheduledCall {
    let item: DispatchWorkItem

    /// Keeps the callback from starting, if it has not yet.
    package func cancel() { item.cancel() }
}
