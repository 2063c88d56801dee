/// Counts arrivals down to zero and then wakes every waiter with the errors that arrived: the start-up and shutdown
/// of the stores' dedicated threads (SQLite's writer and readers, PostgreSQL's connection threads). A count on the
/// one waitable primitive, `WaitableState`.
package final class CountdownLatch: Sendable {
    private struct Count: Sendable {
        var remaining: Int
        var errors: [any Error] = []
    }

    private let count: WaitableState<Count>

    package init(count: Int) { self.count = WaitableState(Count(remaining: count)) }

    /// One participant is done, successfully (`nil`) or not.
    package func arrive(_ error: (any Error)?) {
        count.update { count in
            if let error { count.errors.append(error) }
            count.remaining -= 1
        }
    }

    /// Waits until every participant arrived, even if the calling task is cancelled (the threads it waits for do
    /// not stop sooner for it). - Returns: their errors.
    package func wait() async -> [any Error] {
        await count.waitIgnoringCancellation { $0.remaining <= 0 }
        return count.read(\.errors)
    }
}
