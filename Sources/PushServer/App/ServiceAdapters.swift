import HTTPServer
import Lifecycle

// Stand-ins, until the publish engine and the HTTP server are services themselves: `PublishEngine` (branch
// engine-split) and `HTTPServer` (branch http-conn) get their own `Service` conformances in parallel with this
// file. The integrator replaces these adapters with the real conformances on merge (and `Application`'s
// `StoppableService.engine(…)` / `.http(…)` calls with the engine and servers themselves).

extension StoppableService {
    /// The publish engine: claims and runs publishes until cancelled; then running publishes checkpoint and
    /// unanswered notifications return to the queue within `gracePeriod` seconds.
    static func engine(_ engine: PublishEngine, gracePeriod: Double) -> StoppableService {
        StoppableService(name: "engine", run: { await engine.run() },
                         stop: { await engine.shutdown(gracePeriod: gracePeriod) })
    }

    /// An HTTP listener started beforehand (`HTTPServer.start()`, which binds and returns the port): serves until
    /// cancelled, then stops accepting and lets in-flight requests finish (`HTTPLimits.shutdownGracePeriod`).
    static func http(_ server: HTTPServer, name: String) -> StoppableService {
        StoppableService(name: name, run: { await server.waitUntilStopped() }, stop: { await server.shutdown() })
    }
}
