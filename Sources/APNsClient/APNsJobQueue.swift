import Locking

/// A connection's ready queue, drained from the front on every turn.
typealias APNsJobQueue = FIFO<APNsJob>
