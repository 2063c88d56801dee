import Lifecycle

extension HTTPServer: Service {
    /// The logger's label (`http`, `ops-http`).
    package var name: String { label }

    /// Serves until the calling task is cancelled, then stops accepting, lets in-flight requests finish within
    /// `HTTPLimits.shutdownGracePeriod` (their responses carry `Connection: close`), closes the rest and returns.
    ///
    /// Binds first unless `start()` already did (callers that need the port before serving call `start()`, then
    /// `run()`). Also returns when `shutdown()` stopped the server.
    /// - Throws: `HTTPServerError` when binding fails.
    package func run() async throws {
        if isIdle { try start() }
        await withTaskCancellationHandler {
            await waitUntilStopped()
        } onCancel: {
            beginShutdown()
        }
    }
}
