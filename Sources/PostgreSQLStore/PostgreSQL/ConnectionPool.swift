import Foundation
import Locking

/// Work for a connection thread: runs with that thread's session.
struct PGOperation: Sendable {
    let run: @Sendable (PGSession) -> Void
}

/// A few dedicated threads, each owning one session (one libpq connection at a time), sharing one queue of
/// operations. Blocking libpq calls run only here, never on the Swift concurrency pool; callers wait on
/// continuations.
final class ConnectionPool: Sendable {
    private let queue = BlockingQueue<PGOperation>()

    /// Starts `size` threads; each opens its connection on first use. `finished` runs once per thread at exit.
    init(size: Int, name: String, maxAttempts: Int, connect: @escaping @Sendable () throws -> PGConnection,
         finished: @escaping @Sendable () -> Void) {
        for index in 0..<max(1, size) {
            let thread = Thread { [queue] in
                let session = PGSession(maxAttempts: maxAttempts, connect: connect)
                while true {
                    let batch = queue.take(max: 1)
                    guard let operation = batch.first else { break }
                    operation.run(session)
                }
                session.drop()
                finished()
            }
            thread.name = "\(name)-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Queues an operation; `false` once the pool is shutting down.
    func submit(_ operation: PGOperation) -> Bool { queue.push(operation) }

    /// Stops accepting work; queued operations still run, then the threads close their connections and exit.
    func shutdown() { queue.close() }

    /// Operations waiting for a thread.
    var pending: Int { queue.count }
}
