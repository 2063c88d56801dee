import Locking

/// A service made of a part that has its own stop call: `run` works until `stop` is called, then returns.
///
/// `run` is kept out of reach of the caller's cancellation (it runs in a task of its own), so that its inner waits
/// and sleeps are not cut short; the caller's cancellation calls `stop` instead, which makes `run` drain and
/// return. `run()` returns once both have finished, so whatever `stop` does (say, shutting a client down after the
/// drain) is done before the next service is stopped.
public struct StoppableService: Service {
    public let name: String
    private let work: @Sendable () async throws -> Void
    private let stop: @Sendable () async -> Void

    /// - Parameters:
    ///   - run: works until `stop` was called.
    ///   - stop: makes `run` return; its grace period is the part's own.
    public init(name: String, run: @escaping @Sendable () async throws -> Void,
                stop: @escaping @Sendable () async -> Void) {
        self.name = name
        self.work = run
        self.stop = stop
    }

    public func run() async throws {
        let working = Task { try await work() }
        let stopping = Locked<Task<Void, Never>?>(nil)
        let stop = self.stop
        let result = await withTaskCancellationHandler {
            await working.result
        } onCancel: {
            // Created under the lock: when `stop` made `work` return, the read below finds this task and awaits it.
            stopping.withLock { $0 = Task { await stop() } }
        }
        await stopping.withLock { $0 }?.value
        try result.get()
    }
}
